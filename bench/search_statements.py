"""Where PostgreSQL's time in a search goes, statement by statement (bench/README.md, "In the default
configuration at 100K, and one record"): N in-process searches on ``bench/search.py``'s dataset with both
legs on this thread (``SEARCH_PARALLEL_LEGS`` off, so every statement passes one execute wrapper), each
statement timed and grouped by its leading ``/* search:… */`` tag (or its first words). Wall milliseconds per
search: on an otherwise idle PostgreSQL, close to the CPU it spends.

    .venv/bin/python bench/search_statements.py --size 100000 --searches 100
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import configure_environment, django_setup, log

_TAG = re.compile(r"[\s(]*/\*\s*([\w:.-]+)\s*\*/")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="bench memories (load with bench/search.py)")
    parser.add_argument("--searches", type=int, default=100)
    args = parser.parse_args()
    configure_environment()
    django_setup(migrate=False)
    from _corpus import search_queries
    from _dataset import dataset_ensure
    from django.conf import settings
    from django.db import connection
    from search import bench_principal, bench_token

    from memories.search import services
    from memories.search.contracts import SearchInput

    settings.SEARCH_PARALLEL_LEGS = False
    orgs = dataset_ensure(args.size, reset=False, log=log)["orgs"]
    token, _ = bench_token(orgs)
    principal = bench_principal(token)
    queries = search_queries(args.searches + 20)
    for query in queries[:20]:  # warm-up: caches, the project's learned weights
        services.memory_search_use(principal=principal, search=SearchInput(query=query).to_query())
    spent: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        tag = _TAG.match(sql)
        name = tag.group(1) if tag else re.sub(r"\s+", " ", sql.strip())[:70]
        t0 = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            spent[name] += (time.perf_counter() - t0) * 1000
            count[name] += 1

    n = args.searches
    c0, t0 = time.process_time(), time.perf_counter()
    with connection.execute_wrapper(timed):
        for query in queries[20:]:
            services.memory_search_use(principal=principal, search=SearchInput(query=query).to_query())
    log(
        f"{n} searches: {(time.perf_counter() - t0) * 1000 / n:.2f} ms wall each, this process's CPU "
        f"{(time.process_time() - c0) * 1000 / n:.2f} ms, statements {sum(spent.values()) / n:.2f} ms"
    )
    for name, ms in sorted(spent.items(), key=lambda item: -item[1]):
        log(f"{ms / n:8.2f} ms  {count[name] / n:4.1f}×  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
