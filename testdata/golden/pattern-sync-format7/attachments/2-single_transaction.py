"""Article 000's single transaction as a program: the processed record
claims the event and the job is written in the same transaction."""
import os, sqlite3
from points import point, apply_settings

event = os.environ["IDEMLAB_EVENT_ID"]
db = sqlite3.connect(os.environ["IDEMLAB_DB"], isolation_level=None, timeout=5)
apply_settings(db)

point("ready")
db.execute("BEGIN IMMEDIATE")
claimed = db.execute("INSERT OR IGNORE INTO processed_events (event_id) VALUES (?)", (event,)).rowcount
point("after-processed-insert")
if claimed == 1:
    db.execute("INSERT INTO follow_up_jobs (event_id, job_key) VALUES (?, ?)", (event, "review-" + event))
point("before-commit")
db.execute("COMMIT")
point("after-commit")
db.close()
