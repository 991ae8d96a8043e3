"""Mining notebooks: their text, code and figures as a dataset (``junobench mine``).

Inputs (:mod:`.inputs`: notebook files, folders, a benchmark snapshot, a construction
listing) are read bounded (:mod:`.parse`), their visual outputs decoded and checked
(:mod:`.visuals`), the plotting calls of their code found by static analysis
(:mod:`.calls`) and classified by a versioned mapping (:mod:`.kinds`,
``chart_kinds.json``), each notebook's rows made by a pure function (:mod:`.rows`), in
parallel and in order (:mod:`.parallel`), streamed to parquet with a card and
``croissant.json`` (:mod:`.write`, :mod:`.card`). Notebooks without outputs can be run
first, sandboxed, through verify's executors (:mod:`.execute`). Summaries, plots and the
review sheet of a mined corpus: :mod:`.summary`, :mod:`.plots`, :mod:`.review`.
"""

from junobench.mining.mine import MineResult, mine
from junobench.mining.rows import Limits

__all__ = ["Limits", "MineResult", "mine"]
