"""Kubernetes' CEL libraries, one module each as k8s.io/apiserver ``pkg/cel/library`` keeps
them (quantity, semver, lists, regex, ip and cidr, urls, format) and cel-go's sets extension;
each exports ``DECLARATIONS``, its functions' overloads with their implementations.
:mod:`gen.dra.cel._library` builds the two environments from them."""
