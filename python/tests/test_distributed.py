"""Data-parallel training from Python: two ranks on loopback, and a missing variable."""
import os
import socket
import subprocess
import sys

import pytest

import tempo

RANK_SCRIPT = """
import sys, tempo
r = tempo.rl.train("reinforce", iterations=3, num_envs=4, steps=16, hidden=16, log=False,
                   distributed=True)
print("collectives", r.collectives, "curve", len(r.curve))
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_train_together():
    port = free_port()
    procs = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), TEMPO_DIST_TIMEOUT="30", OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, "-c", RANK_SCRIPT], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            outs.append(out)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for out in outs:
        # 3 gradient all-reduces and the initial parameters' broadcasts.
        words = out.split()
        assert words[0] == "collectives" and int(words[1]) > 3, out
        assert words[3] == "3", out


def test_distributed_without_a_launcher_names_the_variable(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(Exception, match="WORLD_SIZE is not set"):
        tempo.rl.train("reinforce", iterations=1, log=False, distributed=True)
