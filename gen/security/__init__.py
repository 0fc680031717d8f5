"""Security: the Pod Security checker (``podsecurity``, a facts module) and the lint rules
for literal secrets and Pod Security exceptions (GEN5xx)."""
