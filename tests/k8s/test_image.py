"""Image references parse as the container runtime parses them (distribution/reference)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.k8s.image import ImageReference, ImageReferenceError, parse_image_reference

_DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(("text", "parsed"), [
    ("vllm/vllm-openai:v0.11.0", ImageReference("", "vllm/vllm-openai", "v0.11.0", "")),
    ("ubuntu:24.04", ImageReference("", "ubuntu", "24.04", "")),
    ("localhost:5000/a/b@" + _DIGEST, ImageReference("localhost:5000", "a/b", "", _DIGEST)),
    ("ghcr.io/a/b:v1@" + _DIGEST, ImageReference("ghcr.io", "a/b", "v1", _DIGEST)),
    ("[::1]:5000/a:v1", ImageReference("[::1]:5000", "a", "v1", "")),
    ("a__b/c---d.e_f:v1", ImageReference("", "a__b/c---d.e_f", "v1", "")),
    # an upper-case first component is a registry (splitDockerDomain), which may be upper case
    ("Registry.Example.com/a:V1", ImageReference("Registry.Example.com", "a", "V1", "")),
])
def test_references_the_runtime_accepts(text: str, parsed: ImageReference) -> None:
    """Tags, digests, registries with ports, IPv6 hosts and every separator parse."""
    assert parse_image_reference(text) == parsed


@pytest.mark.parametrize(("text", "words"), [
    ("", "empty"),
    ("../../evil/vllm:v0.1", "not a host name"),
    ("vllm/VLLM-openai:v1", "must be lower case"),
    ("registry.example.com//vllm:v1", "(empty)"),
    ("a/b/:v1", "(empty)"),
    ("a___b:v1", "path component 'a___b'"),
    ("a/-b:v1", "path component '-b'"),
    ("a/b:", "tag ''"),
    ("a/b:-v1", "tag '-v1'"),
    ("a/b:" + "v" * 129, "at most 127"),
    ("a/b@sha1:" + "a" * 40, "algorithm 'sha1'"),
    ("a/b@sha256:" + "a" * 63, "64 lower-case"),
    ("a/b@sha256:" + "A" * 64, "64 lower-case"),
    ("a" * 64, "image id"),
    ("a/" + "b" * 255 + ":v1", "longer than 255"),
    ("a b:v1", "path component"),
])
def test_references_the_runtime_refuses(text: str, words: str) -> None:
    """Each mistake is refused with words that say what is wrong."""
    with pytest.raises(ImageReferenceError, match=None) as info:
        parse_image_reference(text)
    assert words in str(info.value)


_COMPONENT = st.from_regex(r"[a-z0-9]{1,5}([._-][a-z0-9]{1,5}){0,2}", fullmatch=True)


@given(st.lists(_COMPONENT, min_size=1, max_size=4),
       st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True))
def test_generated_references_round_trip(path: list[str], tag: str) -> None:
    """Any path of valid components with any valid tag parses back to its parts."""
    text = "registry.example.com/" + "/".join(path) + ":" + tag
    assert parse_image_reference(text) == ImageReference(
        "registry.example.com", "/".join(path), tag, "")
