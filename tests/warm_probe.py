"""A warm process for test_warm_measuring: each child it forks writes the environment variable
WORKBENCH_TEST_MARK and its working folder, then exits."""
import os
import sys

from workbench.estimate import warm


def probe(request: dict) -> int:
    sys.stdout.write(f"{os.environ.get('WORKBENCH_TEST_MARK')}|{os.getcwd()}\n")
    return 0


if __name__ == "__main__":
    warm.serve(sys.argv[2], lambda request: None, probe)
