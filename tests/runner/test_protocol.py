"""The runner protocol: python/mooreeval_runner/protocol.py, src/mooreeval/runner/protocol.h and
docs/runner-job.schema.json name the same job keys, and the runner reads no key outside them."""
import glob
import json
import os
import re

from conftest import ROOT
from mooreeval_runner import protocol


def schema():
    with open(os.path.join(ROOT, "docs", "runner-job.schema.json")) as f:
        return json.load(f)


def key_differences(ours, theirs):
    """(keys only in ours, keys only in theirs), sorted: both empty when the sides agree."""
    return sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))


def test_schema_version_matches():
    assert schema()["$id"] == protocol.JOB_SCHEMA
    assert schema()["additionalProperties"] is False


def test_python_keys_equal_schema_keys():
    assert key_differences(protocol.JOB_KEYS, schema()["properties"]) == ([], [])


def test_a_key_added_on_one_side_is_reported():
    # What the test above reports when the runner learns a key that the schema (and C++) does not know,
    # and when the schema gains one the runner does not.
    assert key_differences(protocol.JOB_KEYS | {"new_key"}, schema()["properties"]) == (["new_key"], [])
    assert key_differences(protocol.JOB_KEYS - {"threads"}, schema()["properties"]) == ([], ["threads"])


def test_cpp_keys_equal_schema_keys():
    with open(os.path.join(ROOT, "src", "mooreeval", "runner", "protocol.cpp")) as f:
        text = f.read()
    body = re.search(r"job_key_name\(JobKey key\)\s*\{(.*?)\n\}", text, re.S).group(1)
    cpp = re.findall(r'return "([a-z_0-9]+)";', body)
    assert key_differences(cpp, schema()["properties"]) == ([], [])


def test_runner_reads_only_protocol_keys():
    read = set()
    for path in glob.glob(os.path.join(ROOT, "python", "mooreeval_runner", "*.py")):
        with open(path) as f:
            read |= set(re.findall(r'\bjob(?:\.get\(|\[)"([a-z_0-9]+)"', f.read()))
    assert read, "no job key reads found"
    assert sorted(read - protocol.JOB_KEYS) == []


def test_gates_and_commands_are_the_cpp_ones():
    with open(os.path.join(ROOT, "src", "mooreeval", "runner", "protocol.cpp")) as f:
        text = f.read()
    gates = re.findall(r'case Gate::k\w+: return "([a-z_]+)";', text)
    commands = re.findall(r'case Command::k\w+: return "([a-z_]+)";', text)
    assert set(gates) == protocol.GATES
    assert set(commands) == protocol.COMMANDS
