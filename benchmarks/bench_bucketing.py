"""Length bucketing on real text: effective (non-padding) tokens/s of encoder
inference and of a fine-tuning epoch, fixed padding against tfbert's bucketing
and PyTorch on the same real tokens (the rows: `benchmarks.common.bucketing`,
which `bench_peers.py` includes too).

    python tools/benchmark.py --what=bucketing
    python benchmarks/bench_bucketing.py
"""

import os
import sys

if __name__ == "__main__":  # `benchmarks.common` when run as a script
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common.bucketing import run  # noqa: E402

if __name__ == "__main__":
    print("\n".join(run()))
