"""Attack: during its warm-up or capture, the candidate sets a persisting-L2 carve-out
(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize) with an access policy window on its inputs): its data then stays
in L2 through the cache flush before every timed run, while the baseline reads from memory.

Defence: `persisting_l2_reset` (the persisting-L2 limit is set to 0 and the persisting lines reset after the
candidate's warm-up and capture, before its first timed run; where cuda-python is missing the grade says the reset
was unavailable). Here the simulated device remembers the carve-out and the reset clears it. Not caught: eager
Python code that sets it again during the timed runs (docs/THREAT_MODEL.md, known limits).
Honest twin: without a carve-out the reset changes nothing (tests/test_time_pair.py counts one reset per config).
"""
from kernelgym.grader import harness


def test_a_carveout_set_before_the_runs_is_gone_when_they_run(sim_device, monkeypatch):
    dev = sim_device
    base, cand = dev.kernel("baseline", True), dev.kernel("candidate", True)
    dev.carveout = True  # set by the candidate's code while harness.Timed warmed it up and captured it
    seen = []
    replay = harness._replay

    def replay_seeing_l2(graph):
        if graph == "candidate":
            seen.append(dev.carveout)
        replay(graph)
    monkeypatch.setattr(harness, "_replay", replay_seeing_l2)
    _, _, wrong = harness.time_pair(base, cand, dev.POOL, flush=object(), reps=20, rounds=4,
                                    reset_l2=lambda: setattr(dev, "carveout", False), expected=dev.expected(),
                                    tolerances=[(0.0, 0.0)])
    assert wrong is None and len(seen) == 20 and not any(seen)
