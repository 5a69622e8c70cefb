"""The torchtitan hand-over parsed by torchtitan 0.2.2's own ``ConfigManager`` (placement/perf/torchtitan_check.py
is the source-reading fallback that the CLI and the app use).

``import torchtitan`` runs its package ``__init__``, which registers the quantization converters and through them
imports ``tokenizers`` and ``triton`` (``torchtitan/models/moe/kernels.py``); torch's CPU build has no triton. The
config subpackage itself needs only torch, ``tyro`` and the standard library. So the fixture below imports
``torchtitan.config.manager`` (the real, unmodified module) with the package's ``__init__`` not run: a bare package
module for ``torchtitan`` whose ``__path__`` is the installed package, restored after the tests. Where the whole
package imports (triton, tokenizers and tyro installed) it is imported normally instead.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import tomllib
import types
import warnings

import pytest

from placement.perf.hardware import ACCELERATORS, Cluster
from placement.perf.launch import check_torchtitan, torchtitan_toml
from placement.perf.layout import Layout, Recompute, Schedule
from placement.perf.search import search
from placement.perf.spaces import get_space
from placement.perf.transformer import MODELS

LLAMA8 = MODELS["llama3-8b"]


def _missing() -> str | None:
    """Why torchtitan's ConfigManager cannot be imported here, or None."""
    for name, how in (("torchtitan", "torchtitan==0.2.2"), ("tyro", "tyro, docstring-parser, typeguard")):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed ({how}: requirements-export-nodeps.txt, scripts/setup.sh --export)"
    return None


@pytest.fixture(scope="module")
def config_manager():
    """torchtitan 0.2.2's ``ConfigManager`` class, imported from the installed release."""
    reason = _missing()
    if reason is not None:
        pytest.skip(reason)
    saved = {k: v for k, v in sys.modules.items() if k == "torchtitan" or k.startswith("torchtitan.")}
    try:
        manager = importlib.import_module("torchtitan.config.manager")
    except ImportError:  # the package __init__ needs triton/tokenizers: import the config subpackage alone
        for key in [k for k in sys.modules if k == "torchtitan" or k.startswith("torchtitan.")]:
            del sys.modules[key]
        spec = importlib.util.find_spec("torchtitan")
        package = types.ModuleType("torchtitan")
        package.__path__ = list(spec.submodule_search_locations)  # type: ignore[union-attr]
        package.__spec__ = spec
        sys.modules["torchtitan"] = package
        manager = importlib.import_module("torchtitan.config.manager")
    assert importlib.metadata.version("torchtitan") == "0.2.2"
    yield manager.ConfigManager
    for key in [k for k in sys.modules if k == "torchtitan" or k.startswith("torchtitan.")]:
        del sys.modules[key]
    sys.modules.update(saved)


def _parse(config_manager, text: str, tmp_path):
    """The JobConfig torchtitan builds from ``text``, and the warnings it gave (tyro warns on mistyped values)."""
    path = tmp_path / "torchtitan.toml"
    path.write_text(text, encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        config = config_manager().parse_args(["--job.config_file", str(path)])
    return config, [str(w.message) for w in caught]


def _optimum(name: str, gpus: int, batch: int) -> Layout:
    model = MODELS[name]
    return search(model, Cluster(ACCELERATORS["H100"], gpus), batch, space=get_space("torchtitan")).plan.layout


@pytest.mark.parametrize(("name", "gpus", "batch"), [("llama3-8b", 64, 256), ("llama3-70b", 256, 512)])
def test_optimum_parses_in_torchtitans_config_manager(config_manager, tmp_path, name, gpus, batch):
    """The planner's torchtitan optimum: every key of the TOML reaches the JobConfig unchanged, with no warning."""
    text = torchtitan_toml(MODELS[name], _optimum(name, gpus, batch))
    _assert_round_trip(config_manager, text, tmp_path)


@pytest.mark.parametrize(
    "layout",
    [
        Layout(pipeline=4, data=2, virtual_stages=2, global_batch=64, schedule=Schedule.INTERLEAVED),
        Layout(pipeline=2, tensor=2, data=2, global_batch=64, sequence_parallel=True, recompute=Recompute.SELECTIVE),
        Layout(pipeline=4, data=2, virtual_stages=2, global_batch=64, schedule=Schedule.ZBV),
        Layout(pipeline=8, data=2, global_batch=64, recompute=Recompute.FULL, schedule=Schedule.GPIPE),
    ],
    ids=["interleaved", "tp-selective", "zbv", "gpipe-full"],
)
def test_pipeline_layouts_parse_in_torchtitans_config_manager(config_manager, tmp_path, layout):
    """Layouts with pipeline fields, every schedule and recompute mode the hand-over writes."""
    _assert_round_trip(config_manager, torchtitan_toml(LLAMA8, layout), tmp_path)


def _assert_round_trip(config_manager, text: str, tmp_path) -> None:
    from torch.distributed.pipelining.schedules import get_schedule_class

    config, warned = _parse(config_manager, text, tmp_path)
    assert warned == [] or all("HF assets" in w for w in warned), warned
    for section, body in tomllib.loads(text).items():
        for key, value in body.items():
            assert getattr(getattr(config, section), key) == value, (section, key)
    # torchtitan hands the schedule's name to torch's get_schedule_class (distributed/pipeline_parallel.py)
    assert get_schedule_class(config.parallelism.pipeline_parallel_schedule) is not None
    assert check_torchtitan(text, LLAMA8.layers if "8B" in text else MODELS["llama3-70b"].layers).ok


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("[parallelism]\nenable_sequence_parallel = true\n", "enable_sequence_parallel"),  # 0.3.0's field
        ("[pipeline]\nstages = 4\n", "pipeline"),
        ("[training]\nmicro_batch_size = 2\n", "micro_batch_size"),
    ],
)
def test_config_manager_and_fallback_refuse_the_same_unknown_names(config_manager, tmp_path, extra, needle):
    """An unknown section or key: torchtitan raises, and the source-reading check refuses it too."""
    text = extra + '\n[model]\nname = "llama3"\nflavor = "8B"\n'
    with pytest.raises(ValueError, match=needle):
        _parse(config_manager, text, tmp_path)
    assert not check_torchtitan(text).ok


def test_config_manager_only_warns_on_mistyped_values(config_manager, tmp_path):
    """tyro takes a TOML value of the wrong type with a warning; the fallback check refuses it outright."""
    text = torchtitan_toml(LLAMA8, Layout(tensor=2, data=4, global_batch=64, sequence_parallel=True))
    bad = text.replace("tensor_parallel_degree = 2", 'tensor_parallel_degree = "2"')
    _config, warned = _parse(config_manager, bad, tmp_path)
    assert any("tensor-parallel-degree" in w for w in warned), warned
    assert not check_torchtitan(bad).ok
