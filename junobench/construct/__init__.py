"""The maintainers' construction pipeline: from the empirical study's labeled crashes to a
snapshot in the published layout.

Each step is a module with an importable function and a ``junobench construct <step>``
verb:

- :mod:`~junobench.construct.filter`: the benchmark's inclusion criteria over labeled crashes;
- :mod:`~junobench.construct.resample`: a seeded sample of further crashes;
- :mod:`~junobench.construct.library_cause`: which ML library a crash belongs to;
- :mod:`~junobench.construct.kaggle`: input datasets from Meta Kaggle, and their download;
- :mod:`~junobench.construct.downsample`: smaller input data (images, archives, tables);
- :mod:`~junobench.construct.synthetic`: synthetic stand-ins for restricted tables.
"""
