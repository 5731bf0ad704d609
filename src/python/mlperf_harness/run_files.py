"""The files of ours in a run's log directory, by name: run_harness writes them, and staging, the
preflight check and the report read them. A leaf module, so that readers need not import the
harness. (LoadGen's own files are named in loadgen/results.py.)"""

RESULT_FILE = "result.json"  # our record of the run
USER_CONF_FILE = "user.conf"  # the LoadGen settings the run applied, as a submission shows them
ACCURACY_TXT = "accuracy.txt"  # accuracy runs: the metric in MLCommons' words (and its name there)
