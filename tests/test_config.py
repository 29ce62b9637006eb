from pathlib import Path

import pytest

from service.config import load_settings


def test_defaults_match_the_contract():
    limits = load_settings(environ={}).limits()
    assert limits["max_body_bytes"] == 1 << 20
    assert (limits["max_items"], limits["max_candidates"], limits["max_turns"]) == (512, 64, 50)
    # API.md: the defaults admit DSTC9's interactive dialogues (630 turns), FED's and DSTC9's turns (3,414 characters)
    assert (limits["max_dialogue_turns"], limits["max_chars"]) == (1000, 10_000)


def test_dialogue_turns_are_a_limit_of_their_own():
    settings = load_settings(environ={"DIALSCORE_MAX_DIALOGUE_TURNS": "700", "DIALSCORE_MAX_TURNS": "8"})
    assert (settings.max_dialogue_turns, settings.max_turns) == (700, 8)
    assert list(settings.limits()).index("max_dialogue_turns") == list(settings.limits()).index("max_turns") + 1
    with pytest.raises(ValueError, match="DIALSCORE_MAX_DIALOGUE_TURNS"):
        load_settings(environ={"DIALSCORE_MAX_DIALOGUE_TURNS": "0"})


def test_environment_then_overrides():
    env = {"DIALSCORE_MAX_ITEMS": "10", "DIALSCORE_MODELS": "bleu4, length", "DIALSCORE_LOAD_SYNC": "true",
           "DIALSCORE_MODEL_STORE": "/tmp/x", "DIALSCORE_CUDA_OPTIONS": "use_tf32=1, gpu_mem_limit=4294967296"}
    settings = load_settings({"max_items": 3}, environ=env)
    assert settings.max_items == 3
    assert settings.models == ("bleu4", "length")
    assert settings.load_sync is True
    assert settings.model_store == Path("/tmp/x")
    assert settings.cuda_options == ("use_tf32=1", "gpu_mem_limit=4294967296")


def test_bad_values_say_which_variable():
    with pytest.raises(ValueError, match="DIALSCORE_MAX_ITEMS"):
        load_settings(environ={"DIALSCORE_MAX_ITEMS": "many"})
    with pytest.raises(KeyError):
        load_settings({"no_such_setting": 1}, environ={})
    with pytest.raises(ValueError, match="DIALSCORE_CUDA_OPTIONS.*use_tf32"):
        load_settings(environ={"DIALSCORE_CUDA_OPTIONS": "use_tf32"})
    with pytest.raises(ValueError, match="DIALSCORE_BATCH_SIZE"):
        load_settings(environ={"DIALSCORE_BATCH_SIZE": "0"})
    for confidence in ("0", "1.5", "nan", "sure"):
        with pytest.raises(ValueError, match="DIALSCORE_NOT_ENGLISH_CONFIDENCE"):
            load_settings(environ={"DIALSCORE_NOT_ENGLISH_CONFIDENCE": confidence})
    assert load_settings(environ={"DIALSCORE_NOT_ENGLISH_CONFIDENCE": "0.95"}).not_english_confidence == 0.95


@pytest.mark.parametrize("variable, value", [("DIALSCORE_MAX_REQUEST_LINE", "0"), ("DIALSCORE_MAX_REQUEST_LINE", "8191"),
                                             ("DIALSCORE_MAX_HEADERS", "40000"), ("DIALSCORE_MAX_HEADER_BYTES", "-1")])
def test_server_limits_stay_where_gunicorn_enforces_them(variable, value):
    # 0 would mean "no limit" to gunicorn, and above its ceiling it enforces the ceiling, not the
    # value GET /models would list.
    with pytest.raises(ValueError, match=f"{variable}={value}: must be from [0-9]+ to"):
        load_settings(environ={variable: value}, check_providers=False)


@pytest.mark.parametrize("variable, floor", [("DIALSCORE_MAX_REQUEST_LINE", 256), ("DIALSCORE_MAX_HEADERS", 16),
                                             ("DIALSCORE_MAX_HEADER_BYTES", 256), ("DIALSCORE_MAX_JSON_DEPTH", 5)])
def test_a_limit_that_would_refuse_the_probes_or_every_body_is_refused_at_start(variable, floor):
    """MAX_REQUEST_LINE=10 or MAX_HEADERS=2 answered /healthz 414 and 431 (the pod restarted for good, the log
    naming no cause); a JSON depth under 5 refused every body the contract describes."""
    with pytest.raises(ValueError, match=f"^{variable}={floor - 1}: must be from {floor} to"):
        load_settings(environ={variable: str(floor - 1)}, check_providers=False)
    load_settings(environ={variable: str(floor)}, check_providers=False)


def test_limits_that_contradict_each_other_are_refused_at_start():
    """A body limit over the pending bytes was taken: a body between them got 503 `overloaded` with
    Retry-After on an idle worker, for good; a whole-head limit under one field would refuse that field."""
    with pytest.raises(ValueError, match=r"^DIALSCORE_MAX_PENDING_BYTES=1000000: must be at least "
                                         r"DIALSCORE_MAX_BODY_BYTES \(4000000\)"):
        load_settings(environ={"DIALSCORE_MAX_BODY_BYTES": "4000000", "DIALSCORE_MAX_PENDING_BYTES": "1000000"})
    with pytest.raises(ValueError, match=r"^DIALSCORE_MAX_PENDING_BYTES=16777216: must be at least"):
        load_settings(environ={"DIALSCORE_MAX_BODY_BYTES": str(32 << 20)})
    with pytest.raises(ValueError, match=r"^DIALSCORE_MAX_HEAD_BYTES=32768: must be at least .* \(40196\)"):
        load_settings(environ={"DIALSCORE_MAX_HEADER_BYTES": "32768", "DIALSCORE_MAX_REQUEST_LINE": "7422"})
    load_settings(environ={"DIALSCORE_MAX_BODY_BYTES": "1000000", "DIALSCORE_MAX_PENDING_BYTES": "1000000",
                           "DIALSCORE_MAX_HEADER_BYTES": "24000", "DIALSCORE_MAX_REQUEST_LINE": "8190"})


def test_server_limits_are_listed():
    limits = load_settings(environ={"DIALSCORE_MAX_REQUEST_LINE": "2048"}).limits()
    assert (limits["max_request_line"], limits["max_headers"], limits["max_header_bytes"]) == (2048, 100, 8190)
    assert limits["max_head_bytes"] == 32768


# --- from a configuration probe: values that were taken and then failed far from their cause ----
@pytest.mark.parametrize("variable, value, message", [
    ("DIALSCORE_MAX_ITEMS", "0", "must be from 1 to"),  # every /score was 413 while /readyz said ready
    ("DIALSCORE_MAX_BODY_BYTES", "-1", "must be from 1 to"),
    ("DIALSCORE_MAX_ENCODER_TOKENS", "0", "must be from 1 to"),
    ("DIALSCORE_INTRA_OP_THREADS", "-1", "must be from 0 to"),
    ("DIALSCORE_WORKERS", "0", "must be from 1 to"),
    # no ceiling: a worker spun at 100% CPU and never loaded; a pybind TypeError; a 413 naming the huge depth
    ("DIALSCORE_INTRA_OP_THREADS", "100000", "must be from 0 to 256"),
    ("DIALSCORE_INTRA_OP_THREADS", "99999999999999999999999", "must be from 0 to 256"),
    ("DIALSCORE_ENCODER_THREADS", "100000", "must be from 0 to 256"),
    ("DIALSCORE_MAX_JSON_DEPTH", "99999999999999999999999", "must be from 5 to 256"),
    ("DIALSCORE_BATCH_SIZE", "99999999999999999999999", "must be from 1 to 8192"),
    ("DIALSCORE_MAX_ITEMS", "99999999999999999999999", "must be from 1 to 1000000000"),
    ("DIALSCORE_WORKERS", "65", "must be from 1 to 64"),
    ("DIALSCORE_LOAD_SYNC", "maybe", "must be true or false"),  # was read as false
    # int() and float() read these: "1_0" as 10, and a confidence of nan or inf
    ("DIALSCORE_MAX_ITEMS", "1_0", "must be a whole number"),
    ("DIALSCORE_MAX_QUEUE", "0x10", "must be a whole number"),
    ("DIALSCORE_WORKERS", "1_0", "must be a whole number"),
    ("DIALSCORE_NOT_ENGLISH_CONFIDENCE", "nan", "must be a finite number"),
    ("DIALSCORE_NOT_ENGLISH_CONFIDENCE", "0_5", "must be a finite number"),
    ("DIALSCORE_READ_TIMEOUT", "1_0", "must be a number of seconds"),
    ("DIALSCORE_MODEL_STORE", "", "must name a folder"),  # was the working directory
    ("DIALSCORE_LOG_LEVEL", "verbose", "must be one of"),
    ("DIALSCORE_PROVIDERS", "CudaExecutionProvider,CPUExecutionProvider", "not an ONNX Runtime execution provider"),
    # a blank Secret served every endpoint open; a non-ASCII token matched no client
    ("DIALSCORE_API_TOKEN", "  \n", "set but blank"),
    ("DIALSCORE_API_TOKEN", "", "set but blank"),  # an empty Secret key sets the variable to ''
    ("DIALSCORE_API_TOKEN", "tökén", "must be ASCII"),
])
def test_values_the_service_cannot_use_are_refused_naming_the_variable(variable, value, message):
    with pytest.raises(ValueError, match=f"{variable}.*{message}"):
        load_settings(environ={variable: value})


def test_a_known_provider_this_build_lacks_is_a_warning_when_asked_for(caplog):
    import onnxruntime as ort

    lacking = next(p for p in ort.get_all_providers() if p not in ort.get_available_providers())
    with caplog.at_level("WARNING"):
        settings = load_settings(environ={"DIALSCORE_PROVIDERS": f"{lacking},CPUExecutionProvider"})
    assert settings.providers[0] == lacking and lacking in caplog.text


@pytest.mark.parametrize("word, expected", [("on", True), ("ON", True), ("yes", True), ("1", True),
                                            ("off", False), ("no", False), ("0", False), ("", False)])
def test_every_documented_boolean_word_reads_as_documented(word, expected):
    """TRUE is 1/true/yes/on and FALSE 0/false/no/off/'' (the error message names them)."""
    assert load_settings(environ={"DIALSCORE_LOAD_SYNC": word}).load_sync is expected


def test_empty_list_entries_are_dropped_and_an_empty_list_means_every_model():
    """DIALSCORE_MODELS: "comma list; empty = every model in the store" (a trailing comma is no model '')."""
    assert load_settings(environ={"DIALSCORE_MODELS": ""}).models == ()
    assert load_settings(environ={"DIALSCORE_MODELS": " bleu4,, length ,"}).models == ("bleu4", "length")


def test_every_integer_setting_has_a_range_declared_beside_it():
    """A new number is bounded above as well as below (a huge thread count hung a worker), in one table."""
    from dataclasses import fields

    from service.config import SERVER_RANGES, SERVICE_RANGES, Settings

    integers = {f.name for f in fields(Settings) if f.type == "int"}
    assert integers == set(SERVER_RANGES) | set(SERVICE_RANGES) and not set(SERVER_RANGES) & set(SERVICE_RANGES)
    room = {"max_body_bytes": {"max_pending_bytes": 1 << 30},  # what check_limits_agree asks beside a highest value
            "max_request_line": {"max_head_bytes": 1 << 24}, "max_header_bytes": {"max_head_bytes": 1 << 24}}
    for name, (lowest, highest) in SERVICE_RANGES.items():
        assert lowest <= getattr(Settings(), name) <= highest < 2**31, name
        load_settings({name: highest, **room.get(name, {})}, environ={}, check_providers=False)


def test_whitespace_around_a_value_is_dropped_and_the_log_level_is_read_in_one_spelling():
    """A log level that passed the check with a space crashed gunicorn's logging set-up; a model store with
    a trailing space was a folder that did not exist (/readyz 503)."""
    from service.observability.logs import gunicorn_logconfig

    settings = load_settings(environ={"DIALSCORE_LOG_LEVEL": " info ", "DIALSCORE_MODEL_STORE": "/srv/store ",
                                      "DIALSCORE_OPENVINO_CACHE_DIR": "/var/cache/ov\n"})
    assert (settings.log_level, settings.model_store, settings.openvino_cache_dir) == (
        "INFO", Path("/srv/store"), "/var/cache/ov")
    assert gunicorn_logconfig(settings.log_level)["root"]["level"] == "INFO"


def test_a_models_list_of_commas_alone_is_refused_and_an_empty_log_level_is_the_default():
    """DIALSCORE_MODELS=' , ' silently served every model; an empty log level alone was an error among the
    settings whose empty value is their default."""
    with pytest.raises(ValueError, match=r"^DIALSCORE_MODELS=' , ': names no model"):
        load_settings(environ={"DIALSCORE_MODELS": " , "}, check_providers=False)
    assert load_settings(environ={"DIALSCORE_MODELS": ""}, check_providers=False).models == ()
    assert load_settings(environ={"DIALSCORE_LOG_LEVEL": ""}, check_providers=False).log_level == "INFO"


def test_the_batch_size_bound_is_the_encoder_runs_token_bound() -> None:
    """A run holds at most MAX_TOKENS padded word pieces, so a larger batch_size would change nothing."""
    from service.artifacts.batching import MAX_TOKENS
    from service.config import SERVICE_RANGES

    assert SERVICE_RANGES["batch_size"][1] == MAX_TOKENS


def test_load_settings_refuses_require_cuda_without_a_cuda_build():
    import onnxruntime as ort

    from service.config import load_settings
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("CUDA build")
    with pytest.raises(ValueError, match="DIALSCORE_REQUIRE_CUDA: this onnxruntime build has no CUDA provider"):
        load_settings(environ={"DIALSCORE_REQUIRE_CUDA": "true"})
