"""The C helper of the Kafka reader (``sources/_fetchcopy.c``); everything else is in
pyproject.toml. The helper is optional: without a C compiler the package installs and
the Kafka source uses confluent-kafka's Consumer instead."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "sparkpipes.sources._fetchcopy",
            ["src/sparkpipes/sources/_fetchcopy.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
