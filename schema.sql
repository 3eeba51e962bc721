-- The shape of a run's results, as the eval runner specification declares it.
-- cer creates its history database from this file (see docs/reports.md); the
-- statements below are the single source of truth for the three tables.

CREATE TABLE IF NOT EXISTS eval_runs (
    run_id TEXT NOT NULL PRIMARY KEY,
    target_module TEXT NOT NULL,
    implementation_id TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    completed_at_ms INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS eval_case_results (
    run_id TEXT NOT NULL,
    case_name TEXT NOT NULL,
    case_class TEXT NOT NULL CHECK (case_class IN ('functional', 'adversarial', 'generator_adversary')),
    category TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pass', 'fail', 'skipped', 'errored')),
    reason TEXT,
    captured_output BLOB,
    elapsed_ms INTEGER,
    PRIMARY KEY (run_id, case_name),
    FOREIGN KEY (run_id) REFERENCES eval_runs (run_id)
);

CREATE TABLE IF NOT EXISTS eval_run_summary (
    run_id TEXT NOT NULL PRIMARY KEY,
    cases_total INTEGER NOT NULL CHECK (cases_total >= 0),
    cases_passed INTEGER NOT NULL CHECK (cases_passed >= 0),
    cases_failed INTEGER NOT NULL CHECK (cases_failed >= 0),
    cases_skipped INTEGER NOT NULL CHECK (cases_skipped >= 0),
    cases_errored INTEGER NOT NULL CHECK (cases_errored >= 0),
    FOREIGN KEY (run_id) REFERENCES eval_runs (run_id)
);
