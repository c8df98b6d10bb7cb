"""Article 000's separate commits as a program: the follow-up job commits,
then the processed record commits on its own."""
import os, sqlite3
from points import point, apply_settings

event = os.environ["IDEMLAB_EVENT_ID"]
db = sqlite3.connect(os.environ["IDEMLAB_DB"], isolation_level=None, timeout=5)
apply_settings(db)

db.execute("BEGIN IMMEDIATE")
if db.execute("SELECT 1 FROM processed_events WHERE event_id = ?", (event,)).fetchone():
    db.execute("ROLLBACK")
    raise SystemExit(0)
db.execute("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", (event, "review-" + event))
point("after-job-insert")
db.execute("COMMIT")
point("after-job-commit")
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO processed_events (event_id) VALUES (?)", (event,))
db.execute("COMMIT")
point("after-processed-commit")
db.close()
