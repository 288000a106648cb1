// Runs SQLite checkpoints on their own thread and connection, so copying the write-ahead log into
// the database file (and the fsyncs that go with it) never blocks the service's event loop. Plain
// JavaScript: a worker starts without the TypeScript loader the service and its tests run under.
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const db = new Database(workerData.filename);
db.pragma('synchronous = NORMAL');
db.pragma('busy_timeout = 0');

let failures = 0;
let reported = -1;
function checkpoint() {
  try {
    // PASSIVE never waits for the writer: it copies what it can and leaves the rest for next time.
    let [result] = db.pragma('wal_checkpoint(PASSIVE)');
    if (result.log >= workerData.restartAboveFrames) result = restart() ?? result;
    failures = 0;
    if (result.checkpointed !== reported) {
      reported = result.checkpointed;
      parentPort.postMessage({ type: 'checkpointed', log: result.log, checkpointed: result.checkpointed });
    }
    return result;
  } catch (error) {
    // SQLITE_BUSY (another checkpointer, e.g. the admin CLI closing) is routine; report the rest.
    if (++failures === 10) parentPort.postMessage({ type: 'error', message: String(error) });
    return null;
  }
}

/**
 * A writer that never pauses never starts the log over: it restarts the log only when, as its
 * transaction begins, every frame is already in the database file, and under steady load the
 * previous batch has always just added some. So once the log is long, RESTART: it briefly holds
 * new writers back (they wait in SQLite's busy handler, a few milliseconds, since PASSIVE has just
 * copied nearly everything) so that the next transaction writes from the start of the file again.
 */
function restart() {
  db.pragma('busy_timeout = 2000');
  try {
    const [result] = db.pragma('wal_checkpoint(RESTART)');
    return result.busy ? null : result;
  } finally {
    db.pragma('busy_timeout = 0');
  }
}

const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage({ type: 'stopped' });
  parentPort.close();
});
