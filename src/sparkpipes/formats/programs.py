"""Record programs: what every record passes through before it decodes (SingleStore's
``WITH TRANSFORM ('uri', 'executable', 'arguments')``).

SingleStore downloads the program a URI names and runs it on each batch partition, its
records on stdin and the records to load on stdout. sparkpipes runs only programs it
has itself, looked up by URI in :data:`PROGRAMS` — today ``memsql://json``, SingleStore's
built-in jq (``formats.jq``). A URI of anything else (``http://…/transform.py``,
``file://…``) is refused when the pipeline is made: running a program a statement names
would let anyone who may create a pipeline run code on the server.

Promises of a :class:`Program`: it maps each input record to zero or more output records
and says which input each output came from, so a record that fails to decode after the
program is still named by its source partition and offset; an input the program fails
on is a :class:`RecordError` of that input, never a failed chunk.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sparkpipes.config import RecordProgram
from sparkpipes.errors import ConfigError
from sparkpipes.formats.base import Decoded, Decoder, RecordError
from sparkpipes.sources.base import Framing
from sparkpipes.util.registry import Registry

PROGRAMS = Registry("WITH TRANSFORM program", entry_point_group="sparkpipes.programs")
PROGRAMS.register("memsql://json", "sparkpipes.formats.jq:JqProgram", install_hint="pip install jq")


@dataclass(frozen=True)
class Ran:
    """What a program made of a chunk of records."""

    values: pa.Array  # binary: the records it wrote, in order
    origin: pa.Array  # int32: for each of them, the index of the input record it came from
    errors: tuple[RecordError, ...]  # the inputs it failed on


class Program(abc.ABC):
    """A record program built from ``WITH TRANSFORM``'s executable and arguments; checks
    them when built (a ConfigError naming what is wrong). Pickled to executors: nothing
    that cannot be pickled is kept between calls."""

    def __init__(self, executable: str, arguments: str) -> None:
        self.executable = executable
        self.arguments = arguments

    @abc.abstractmethod
    def run(self, values: pa.Array) -> Ran:
        """The records ``values`` (binary payloads) become."""


def build_program(spec: RecordProgram) -> Program:
    """The program ``spec`` names; a URI sparkpipes does not run is a ConfigError."""
    if spec.uri.lower() not in PROGRAMS.names():
        raise ConfigError(
            f"WITH TRANSFORM '{spec.uri}' is not supported: sparkpipes does not download or "
            f"run programs a pipeline names; it runs {', '.join(PROGRAMS.names())} (jq) "
            "itself, and SET / WHERE or INTO PROCEDURE transform records too"
        )
    return PROGRAMS.get(spec.uri)(spec.executable, spec.arguments)


class ProgramDecoder(Decoder):
    """``inner`` decoding what ``program`` makes of the records. The kept indices and
    errors of :class:`Decoded` name input records: an input the program turns into
    several records is kept once per row, one it turns into none neither kept nor an
    error (the program left it out, as a WHERE would)."""

    def __init__(self, inner: Decoder, program: Program) -> None:
        if inner.columnar:
            raise ConfigError(
                "WITH TRANSFORM takes records of text (JSON, CSV, …); "
                f"{type(inner).__name__} reads columns"
            )
        self.inner, self.program = inner, program
        self.schema, self.paths, self.csv = inner.schema, inner.paths, inner.csv
        self.on_missing, self.text_values = inner.on_missing, inner.text_values

    def framing(self, skip_lines: int = 0) -> Framing:
        return self.inner.framing(skip_lines)

    def decode(self, values: pa.Array) -> Decoded:
        ran = self.program.run(values)
        decoded = self.inner.decode(ran.values)
        origin = ran.origin
        errors = [*ran.errors]
        errors += [RecordError(origin[e.index].as_py(), e.reason) for e in decoded.errors]
        return Decoded(decoded.table, origin.take(decoded.kept), tuple(errors))

    def _fast(self, values: pa.Array) -> pa.Table:  # pragma: no cover - decode() is whole
        raise NotImplementedError

    def _parse_one(self, raw: bytes) -> dict[str, Any]:  # pragma: no cover
        raise NotImplementedError
