"""Model serving: inference engines and images (``engines``), the model catalog
(``model_catalog``) and the memory fit (``fit``) — facts any layer above may use — then
the vLLM builder and the serving lint rules (GEN3xx)."""
