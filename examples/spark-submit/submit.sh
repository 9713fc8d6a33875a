#!/usr/bin/env bash
# Run job.py with spark-submit, kcodec coming from the packed environment on every node.
#   submit.sh ARCHIVE MASTER LOG_DIR OUTPUT
# Executors unpack ARCHIVE as ./environment in their working directories (--archives)
# and run ./environment/bin/python. The driver (client mode) and local-mode workers run
# in this directory, so the same archive is unpacked here too.
set -euo pipefail
archive=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
job="$(cd "$(dirname "$0")" && pwd)/job.py"
rm -rf environment && mkdir environment && tar -xzf "$archive" -C environment
if [ -z "${SPARK_HOME:-}" ]; then  # a pip-installed pyspark is its own Spark home
    SPARK_HOME=$(python -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))")
    export SPARK_HOME
fi
export PYSPARK_PYTHON=./environment/bin/python PYSPARK_DRIVER_PYTHON=./environment/bin/python
exec "$SPARK_HOME/bin/spark-submit" --master "$2" --archives "$archive#environment" \
    "$job" "$3" "$4"
