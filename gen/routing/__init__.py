"""Routed serving: InferencePool, the endpoint picker (llm-d-router), HTTPRoute, policies."""
