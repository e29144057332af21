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
import re
import shlex
from typing import Any

import jq
import pyarrow as pa

from sparkpipes.errors import ConfigError
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
    "def get_prog_origin: null; "
)
_ERROR_KEY = "__sparkpipes_jq_error"
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
        if self._compiled is None:
            caught = f'catch {{"{_ERROR_KEY}": tostring}}'
            text = f"{_SANDBOX}{{}} as $ENV | try [ ({self.filter}\n) ] {caught}"
            try:
                self._compiled = jq.compile(text, args=self.args)
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
        compiled = self._compile()
        outputs: list[Any] | None = None
        if None not in texts:
            try:
                outputs = compiled.input_text(b"\n".join(texts).decode("utf-8")).all()
            except (ValueError, UnicodeDecodeError):
                outputs = None
            if outputs is not None and len(outputs) != len(texts):
                outputs = None
        records: list[bytes] = []
        origin: list[int] = []
        errors: list[RecordError] = []
        for i, raw in enumerate(texts):
            if outputs is not None:
                out = outputs[i]
            elif raw is None:
                errors.append(RecordError(i, "record has no value (null payload)"))
                continue
            else:
                try:
                    results = compiled.input_text(raw.decode("utf-8")).all()
                except UnicodeDecodeError as e:
                    errors.append(RecordError(i, f"jq: not UTF-8 at byte {e.start}"))
                    continue
                except ValueError as e:
                    errors.append(RecordError(i, f"jq: {e}"))
                    continue
                failed = [r for r in results if isinstance(r, dict)]
                out = failed[0] if failed else [v for r in results for v in r]
            if isinstance(out, dict):
                errors.append(RecordError(i, f"jq: {out.get(_ERROR_KEY)}"))
                continue
            for line in self._lines(out):
                records.append(line.encode("utf-8"))
                origin.append(i)
        return Ran(pa.array(records, pa.binary()), pa.array(origin, pa.int32()), tuple(errors))

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
