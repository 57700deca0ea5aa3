# The runner's entry: run.py -- NAME, or run.py --warm (crucible_runner,
# beside crucible in lib/, says what they do). The runner itself is a
# module, whose bytecode the interpreter may find ready; this script it
# compiles from source each time.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import crucible_runner  # noqa: E402

crucible_runner.start()
