"""service/artifacts/openvino.py: the float graph OpenVINO compiles from an int8 encoder."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.artifacts.openvino import float_graph
from tests.conftest import MODEL_STORE


def test_a_float_graph_that_cannot_be_written_says_where_and_how_much_room_there_is(tmp_path: Path) -> None:
    """A /tmp smaller than the graph read as ONNX Runtime's "INVALID_PROTOBUF: Protobuf serialization
    failed", as if the model file were corrupt. A file in the folder's place fails for every user."""
    encoder = MODEL_STORE / "minilm-l6" / "encoder-int8.onnx"
    (tmp_path / "not-a-folder").write_text("")
    with pytest.raises(OSError, match=r"float graph \(about \d+ MiB\) could not be written to .*not-a-folder, "
                                      r"which has \d+ MiB free"):
        float_graph(encoder, tmp_path / "not-a-folder")
