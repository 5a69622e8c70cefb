"""The model against the published Megatron-LM runs (Narayanan et al. 2021, Table 1), and scale."""

import json

import pytest

from placement.perf import (
    ACCELERATORS,
    CALIBRATION_FILE,
    MODELS,
    Cluster,
    Layout,
    PerfParams,
    calibration_band,
    calibration_results,
    eq3_flops,
    iteration_flops,
    load_calibration,
    predict,
)


def test_table_is_the_published_one():
    data = json.loads(CALIBRATION_FILE.read_text())
    assert "Narayanan" in data["source"] and len(data["rows"]) == 10
    # the 1T row: 163 TFLOP/s per GPU on 3072 GPUs
    row = data["rows"][-1]
    seconds = eq3_flops(row[8], 2048, row[2], row[1], 51200) / (row[9] * 1e12 * row[7])
    assert 95 < seconds < 110


def test_every_row_within_ten_percent_and_fits():
    results = calibration_results()
    assert len(results) == 10
    for r in results:
        assert abs(r.ratio - 1) <= 0.10, (r.row.label, r.ratio)
        assert r.fits and r.memory_bytes <= 80 * 2**30, (r.row.label, r.memory_bytes)


def test_the_check_can_fail():
    # A model that ignores half the GPU's throughput is caught by the same check.
    slow = PerfParams(gemm_fraction=0.5)
    assert any(abs(r.ratio - 1) > 0.10 for r in calibration_results(slow))


def test_band_is_computed_from_the_table():
    band = calibration_band()
    errors = [abs(r.ratio - 1) for r in calibration_results()]
    assert band.rows == 10
    assert band.max_abs_error == pytest.approx(max(errors))
    assert band.mean_abs_error == pytest.approx(sum(errors) / 10)


def test_sixteen_thousand_gpus():
    model = MODELS["llama3-405b"]
    cluster = Cluster(ACCELERATORS["H100"], 16384)
    layout = Layout(tensor=8, pipeline=2, data=256, context=4, virtual_stages=3, global_batch=2048,
                    sequence_parallel=True, zero_stage=1, overlap_grad_reduce=True, overlap_param_gather=True,
                    tp_comm_overlap=True)  # fmt: skip
    pred = predict(model, cluster, layout)
    assert pred.iteration_seconds > 0 and 0 < pred.mfu < 1
    assert pred.tokens_per_second == pytest.approx(2048 * 8192 / pred.iteration_seconds)


def test_flop_count_is_the_papers_eq3():
    for row in load_calibration():
        m = row.model
        _, hardware = iteration_flops(m, row.layout)
        want = eq3_flops(row.layout.global_batch, m.seq_length, m.layers, m.hidden, m.padded_vocab(row.layout.tensor))
        # GEMMs, full s x s attention, logits and one recomputed forward: exactly the paper's count
        assert hardware == pytest.approx(want, rel=1e-12)
