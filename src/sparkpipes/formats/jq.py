"""``WITH TRANSFORM ('memsql://json', '', '<jq arguments>')``: SingleStore's built-in jq,
run in the task by libjq (the ``jq`` package) instead of a process per batch partition.

As the jq command SingleStore runs, each record (a JSON text) is one input of the filter
and each output one line the pipeline's FORMAT then reads: with ``-r`` a string output
is written raw (``@tsv`` lines for ``FIELDS TERMINATED BY '\\t'``), any other output as
JSON text; with ``-j`` a record's outputs are joined without newlines. An output with
newlines is several records, as it is several lines of jq's output.

The filter runs sandboxed: ``env`` and ``$ENV`` are empty (the server's environment holds
its secrets), modules cannot be imported (``import``/``include`` read files), ``input``,
``inputs``, ``halt`` and ``halt_error`` are errors of the record (each record is a
filter's whole input), ``debug``/``stderr`` pass their input through, and flags that read
files or change what an input is (``-f``, ``--rawfile``, ``--slurpfile``, ``-L``, ``-s``,
``-n``, ``--stream``, ``--seq``, ``--args``) are refused. Output formatting flags are taken
(``-c`` is what is always written; ``-C``, ``-M``, ``--tab``, ``--indent n`` change nothing).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import struct
import subprocess
import sys
from typing import Any

import jq
import pyarrow as pa

from sparkpipes.errors import ConfigError, TransformError
from sparkpipes.formats.base import RecordError
from sparkpipes.formats.programs import Program, Ran

#: what the filter cannot reach: shadowing definitions, before the user's filter (which
#: is therefore never at the top of the program, where ``import`` would have to be)
_SANDBOX = (
    'def env: {}; def input: error("input is not supported here"); '
    'def inputs: error("inputs is not supported here"); '
    'def halt: error("halt is not supported here"); def halt_error: error(.); '
    "def halt_error($code): error(.); def debug: .; def debug($m): .; def stderr: .; "
    "def input_filename: null; def get_search_list: []; def get_jq_origin: null; "
    'def get_prog_origin: null; def modulemeta: error("modulemeta is not supported here"); '
)
_ERROR_KEY = "__sparkpipes_jq_error"
#: what the child running a chunk's records may use
CPU_SECONDS = 10
MEMORY_BYTES = 2 << 30
#: what the child may write back for a chunk: this, or so many times the chunk's bytes
OUTPUT_BYTES, OUTPUT_RATIO = 16 << 20, 4
_TOO_MUCH = 3  # the child's exit code when its answers pass that
#: the child: each length-prefixed record (one JSON value) through the filter, one answer
#: line per record, ``[true, outputs]`` or ``[false, why]``
_RUNNER = f"""
import json, resource, struct, sys
cpu, memory, most = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
import jq
program = jq.compile(sys.argv[1], args=json.loads(sys.argv[2]))
data, at, written = sys.stdin.buffer.read(), 0, 0
def answer(o):
    global written
    line = json.dumps(o) + "\\n"
    written += len(line)
    if written > most:
        sys.exit({_TOO_MUCH})
    sys.stdout.write(line)
out = type("Out", (), {{"append": staticmethod(answer)}})
while at < len(data):
    (n,) = struct.unpack_from("<Q", data, at)
    raw, at = data[at + 8 : at + 8 + n], at + 8 + n
    try:
        results = program.input_text(raw.decode("utf-8")).all()
    except UnicodeDecodeError as e:
        out.append([False, f"not UTF-8 at byte {{e.start}}"])
        continue
    except ValueError as e:
        out.append([False, str(e)])
        continue
    if len(results) != 1:
        out.append([False, f"the record holds {{len(results)}} JSON values, not one"])
    elif isinstance(results[0], dict):
        out.append([False, results[0].get("{_ERROR_KEY}")])
    elif not isinstance(results[0], list):  # the filter closed the wrapper around it
        out.append([False, "the filter is not one jq expression"])
    else:
        out.append([True, results[0]])
"""
_SWITCHES = {
    "-r": "raw",
    "--raw-output": "raw",
    "-j": "join",
    "--join-output": "join",
    "-a": "ascii",
    "--ascii-output": "ascii",
    "-S": "sort",
    "--sort-keys": "sort",
}
_NO_EFFECT = {
    "-c",
    "--compact-output",
    "-C",
    "--color-output",
    "-M",
    "--monochrome-output",
    "--tab",
}


class JqProgram(Program):
    """jq with the filter and flags of ``arguments`` (as on jq's command line)."""

    def __init__(self, executable: str, arguments: str) -> None:
        super().__init__(executable, arguments)
        self.flags: set[str] = set()
        self.args: dict[str, Any] = {}
        self.filter = self._parse(arguments)
        self._compiled: Any = None
        self._compile()  # a filter jq cannot compile is refused when the pipeline is made

    def _parse(self, arguments: str) -> str:
        try:
            words = shlex.split(arguments)
        except ValueError as e:
            raise ConfigError(
                f"WITH TRANSFORM's jq arguments do not split into words: {e}"
            ) from None
        filters: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            if w in ("--arg", "--argjson") and i + 2 < len(words):
                name, value = words[i + 1], words[i + 2]
                try:
                    self.args[name] = value if w == "--arg" else json.loads(value)
                except ValueError:
                    raise ConfigError(f"jq --argjson {name}: not JSON: {value!r}") from None
                i += 3
                continue
            if w == "--indent" and i + 1 < len(words):
                i += 2
                continue
            if w.startswith("-") and len(w) > 1 and not filters:
                short = [f"-{c}" for c in w[1:]] if not w.startswith("--") else [w]
                for flag in short:
                    if flag not in _SWITCHES and flag not in _NO_EFFECT:
                        raise ConfigError(
                            f"jq option {flag} is not supported in WITH TRANSFORM (supported: "
                            "-r, -j, -c, -a, -S, --arg, --argjson; each record is one input)"
                        )
                    self.flags.add(_SWITCHES.get(flag, "none"))
            else:
                filters.append(w)
            i += 1
        if "join" in self.flags:
            self.flags.add("raw")  # as jq's -j
        if len(filters) > 1:
            raise ConfigError(
                f"WITH TRANSFORM's jq arguments hold {len(filters)} filters: "
                f"{', '.join(map(repr, filters))} (quote the filter as one argument)"
            )
        return filters[0] if filters else "."

    def _compile(self) -> Any:
        """Compile the filter here, once: a filter jq refuses is refused when the pipeline
        is made (the records run in a child, :meth:`_in_child`)."""
        if self._compiled is None:
            try:
                self._compiled = jq.compile(self._program_text(), args=self.args)
            except ValueError as e:
                first = re.sub(
                    r" at <top-level>, line \d+, column \d+:?", "", str(e).split("\n")[0]
                )
                raise ConfigError(
                    f"WITH TRANSFORM's jq filter {self.filter!r} does not compile: {first}"
                ) from None
        return self._compiled

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_compiled": None}

    def run(self, values: pa.Array) -> Ran:
        texts = values.cast(pa.binary()).to_pylist()
        given = [i for i, raw in enumerate(texts) if raw is not None]
        results = self._in_child([texts[i] for i in given]) if given else []
        records: list[bytes] = []
        origin: list[int] = []
        errors = [
            RecordError(i, "record has no value (null payload)")
            for i, raw in enumerate(texts)
            if raw is None
        ]
        for i, (ok, out) in zip(given, results, strict=True):
            if not ok:
                errors.append(RecordError(i, f"jq: {out}"))
                continue
            for line in self._lines(out):
                records.append(line.encode("utf-8"))
                origin.append(i)
        errors.sort(key=lambda e: e.index)
        return Ran(pa.array(records, pa.binary()), pa.array(origin, pa.int32()), tuple(errors))

    def _in_child(self, records: list[bytes]) -> list[tuple[bool, Any]]:
        """Each record through the filter in a child process of its own, with CPU time,
        memory and output limits and an empty environment: a filter that loops or grows
        without end costs the chunk (TransformError), never the worker or the server.
        (ok, outputs) or (False, why) per record."""
        payload = b"".join(struct.pack("<Q", len(r)) + r for r in records)
        most = max(OUTPUT_BYTES, OUTPUT_RATIO * len(payload))
        self._compile()  # refused filters never reach a child
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-I",
                    "-c",
                    _RUNNER,
                    self._program_text(),
                    json.dumps(self.args),
                    str(CPU_SECONDS),
                    str(MEMORY_BYTES),
                    str(most),
                ],
                input=payload,
                capture_output=True,
                env={"PATH": os.defpath, "LC_ALL": "C.UTF-8"},
                timeout=CPU_SECONDS + 20,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise TransformError(self._failed("did not finish in time", len(records))) from None
        if done.returncode != 0:
            why = {
                -signal.SIGXCPU: f"ran out of its {CPU_SECONDS} s of CPU time",
                -signal.SIGKILL: f"ran out of its {CPU_SECONDS} s of CPU time",
            }.get(done.returncode, f"died ({done.stderr.decode(errors='replace')[-300:]!r})")
            if b"MemoryError" in done.stderr or b"out of memory" in done.stderr.lower():
                why = f"ran out of its {MEMORY_BYTES >> 20} MiB of memory"
            if done.returncode == _TOO_MUCH:
                why = f"wrote more than {most >> 20} MiB (at most {OUTPUT_RATIO} times its input)"
            raise TransformError(self._failed(why, len(records)))
        out = [json.loads(line) for line in done.stdout.splitlines()]
        if len(out) != len(records):
            raise TransformError(self._failed("gave an answer per record it did not", len(records)))
        return [(ok, value) for ok, value in out]

    def _failed(self, why: str, n: int) -> str:
        return f"WITH TRANSFORM's jq filter {self.filter!r} {why} on a chunk of {n} records"

    def _program_text(self) -> str:
        caught = f'catch {{"{_ERROR_KEY}": tostring}}'
        return f"{_SANDBOX}{{}} as $ENV | try [ ({self.filter}\n) ] {caught}"

    def _lines(self, outputs: list[Any]) -> list[str]:
        texts = [
            v
            if "raw" in self.flags and isinstance(v, str)
            else json.dumps(
                v,
                ensure_ascii="ascii" in self.flags,
                sort_keys="sort" in self.flags,
                separators=(",", ":"),
            )
            for v in outputs
        ]
        text = "".join(texts) if "join" in self.flags else "\n".join(texts)
        if not texts:
            return []
        return text.split("\n")
