//! Reading a history that cannot be written (a read-only file or file system): opened
//! read-only, nothing migrated, moved aside or written, so `headroom fit` and `headroom
//! history` still answer from it. A WAL database needs its `-shm` file, which a read-only
//! folder cannot hold: it is then opened as immutable (read as it is on disk).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::{Store, StoreError, StoreProblem, SCHEMA_VERSION};

impl Store {
    /// Opens the database at `path` to read it: as [`Store::open`] does, or, when that fails
    /// and the file exists (it cannot be written, nor its folder), read-only.
    pub fn open_to_read(path: &Path) -> Result<(Store, Option<StoreProblem>), StoreError> {
        let writable = Store::open(path);
        if writable.is_ok() || !path.is_file() {
            return writable;
        }
        match Store::open_read_only(path) {
            Ok(store) => Ok((store, None)),
            // The first error says what is wrong with it.
            Err(_) => writable,
        }
    }

    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let failed = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let text = path.to_string_lossy();
        let escaped: String = text
            .chars()
            .map(|c| match c {
                '%' => "%25".to_string(),
                '?' => "%3f".to_string(),
                '#' => "%23".to_string(),
                c => c.to_string(),
            })
            .collect();
        let open = |query: &str| -> rusqlite::Result<Connection> {
            let conn = Connection::open_with_flags(format!("file:{escaped}?{query}"), flags)?;
            conn.busy_timeout(Duration::from_secs(5))?;
            let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
            if version == SCHEMA_VERSION {
                Ok(conn)
            } else {
                Err(rusqlite::Error::InvalidQuery)
            }
        };
        let conn = open("mode=ro")
            .or_else(|_| open("immutable=1"))
            .map_err(failed)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }
}
