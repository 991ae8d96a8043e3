"""Records → the Hugging Face Hub: writing an export (parquet, dataset card, Croissant,
checksums; :mod:`.write_export`, :mod:`.card`, :mod:`.croissant`), checking it against its
manifest (:mod:`.check`), pushing it to a dataset repo as one commit (:mod:`.push`), what
changed between two releases (:mod:`.changes`) and a release itself (:mod:`.release`).
Builds on :mod:`junobench.data` (which reads an export back: :mod:`junobench.data.export`)
and :func:`junobench.load`.
"""
