"""Batch runs: lathe over many tasks, each in a fresh copy, scored by the task's own
verify command, with results that resume correctly (`lathe batch`).

`tasks.py` reads a task list (a folder of task folders, or JSONL); `task_run.py` runs one
task end to end and returns its `TaskResult` (self-contained, so a Ray worker runs it
too), its processes started and stopped by `processes.py`, the task's own commands in
the executor `task_commands.py` chooses; `results.py` is the run folder
(`results.jsonl`, `manifest.json`); `executors.py` the local pool and `ray_executor.py`
Ray; `driver.py` decides what runs (resume, retries, budgets) and writes each result as
it lands; `report.py` the HTML report.
"""
