"""Records → the Hugging Face Hub: writing an export (parquet, dataset card, checksums;
:mod:`.write_export`, :mod:`.card`), reading one back (:mod:`.read_export`, used by
:func:`junobench.load`), checking it against its manifest (:mod:`.check`) and pushing
it to a dataset repo as one commit (:mod:`.push`). Builds on :mod:`junobench.data`.
"""
