"""Entry point: python3 -m mooreeval_runner <mode> --job JOB.json --result RESULT.json"""
import sys

from .cli import main

sys.exit(main(sys.argv[1:]))
