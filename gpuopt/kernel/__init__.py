"""The kernel: the records, units, errors, input boundary and result envelope that every layer shares.

It is the ground floor of the house (docs/architecture.md "Layers"): ``providers``, ``pricing_cache``,
``optimizer`` and the CLI/API import it, and it imports nothing of the project outside ``gpuopt.kernel``
(tests/test_structure.py checks it). It sits inside the ``gpuopt`` distribution package because the design card
fixes the four top-level packages; ``gpuopt/__init__.py`` imports nothing eagerly, so importing
``gpuopt.kernel.records`` loads the kernel alone, never the CLI or the API.

Modules: ``records`` (the offer columns, pricing and payment names, units such as HOURS_PER_MONTH),
``errors`` (GpuoptError and its kinds), ``inputs`` (decoding configuration files: UTF-8, YAML, strict JSON,
number checks), ``redact`` (secrets out of messages and logs), ``documents`` (the versioned JSON envelope of
every result, ``frame`` for ``.to_dataframe()``), ``words`` (counts in words: '1 GPU', '3 replicas').
"""
