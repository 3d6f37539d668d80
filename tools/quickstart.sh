#!/usr/bin/env bash
# The main job, end to end (see tools/quickstart.py): released BERT weights ->
# fine-tuned sentiment classifier (and the random-init baseline) -> SavedModel
# that takes raw strings -> op-rule check -> predictions from a fresh process
# -> strings-in TFLite -> sentence-embedding neighbours; a summary table at the
# end. About 3-4 minutes on 2 CPU cores. Writes saved_models/quickstart/ (or
# --output_dir=DIR); flags pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
exec python tools/quickstart.py "$@"
