"""Tests for gen.serving.hf_files: finding a model's files, JSON with lines, safetensors."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from gen.errors import ModelConfigError
from gen.serving.hf_config import profile_text, read_model
from gen.serving.hf_files import find_model_files, read_checkpoint, read_json
from gen.serving.model_catalog import model_catalog

QWEN3_MOE = Path(__file__).parent / "data" / "qwen3-30b-a3b" / "config.json"


def test_hugging_face_cache_layout(tmp_path: Path) -> None:
    """models--ORG--NAME: refs/main names the snapshot; the id and revision come from it."""
    entry = tmp_path / "models--Qwen--Qwen3-30B-A3B"
    snapshot = entry / "snapshots" / "0123abcd"
    snapshot.mkdir(parents=True)
    shutil.copy(QWEN3_MOE, snapshot / "config.json")
    (entry / "snapshots" / "old").mkdir()
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text("0123abcd\n")
    files = find_model_files(entry)
    assert (files.name, files.revision) == ("Qwen/Qwen3-30B-A3B", "0123abcd")
    assert read_model(files) == model_catalog().lookup("Qwen/Qwen3-30B-A3B")
    assert "revision 0123abcd" in profile_text(read_model(files), files)


def test_cache_layout_without_refs_and_two_snapshots_is_refused(tmp_path: Path) -> None:
    """Two snapshots and no refs/main: gen does not guess which one."""
    entry = tmp_path / "models--a--b"
    for rev in ("r1", "r2"):
        (entry / "snapshots" / rev).mkdir(parents=True)
        shutil.copy(QWEN3_MOE, entry / "snapshots" / rev / "config.json")
    with pytest.raises(ModelConfigError, match=r"snapshots with a config.json: r1, r2"):
        find_model_files(entry)


def test_not_utf8_and_missing_path(tmp_path: Path) -> None:
    """Non-UTF-8 bytes and a path that does not exist are errors, not tracebacks."""
    path = tmp_path / "config.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(ModelConfigError, match="not UTF-8"):
        read_model(find_model_files(path))
    with pytest.raises(ModelConfigError, match="no such file"):
        find_model_files(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelConfigError, match=r"no config\.json here"):
        find_model_files(tmp_path / "empty")


def test_every_key_path_has_its_line_and_column(tmp_path: Path) -> None:
    """read_json() locates keys at any depth, in objects and arrays, strings with escapes."""
    path = tmp_path / "config.json"
    path.write_text('{\n  "a": {"b\\"c": [1, {"d": 2}]},\n  "e": "x,y:{"\n}\n')
    data, positions = read_json(path, "c.json", 10_000)
    assert data == {"a": {'b"c': [1, {"d": 2}]}, "e": "x,y:{"}
    assert positions[("a",)] == (2, 3)
    assert positions[("a", 'b"c')] == (2, 9)
    assert positions[("a", 'b"c', 1, "d")] == (2, 22)
    assert positions[("e",)] == (3, 3)
    assert positions[()] == (1, 1)


def test_safetensors_index_and_headers(tmp_path: Path) -> None:
    """The index's total_size is the checkpoint size; shard headers give the exact count."""
    header = {"w": {"dtype": "F8_E4M3", "shape": [4, 8], "data_offsets": [0, 32]},
              "s": {"dtype": "F32", "shape": [4], "data_offsets": [32, 48]}}
    raw = json.dumps(header).encode()
    (tmp_path / "model-1.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    index = {"metadata": {"total_size": 48}, "weight_map": {"w": "model-1.safetensors",
                                                            "s": "model-1.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert read_checkpoint(tmp_path, "m", read_safetensors=True).parameters == 36
    assert read_checkpoint(tmp_path, "m", read_safetensors=False).parameters is None
    assert read_checkpoint(tmp_path, "m", read_safetensors=False).bytes == 48
    (tmp_path / "model-1.safetensors").write_bytes(b"\x00" * 4)
    with pytest.raises(ModelConfigError, match="not a safetensors file"):
        read_checkpoint(tmp_path, "m", read_safetensors=True)
