//! The groups of abxd's subcommands that work on the store and the fleet (`abxd store`, `abxd
//! machine`) and the hidden worker processes (`abxd worker`).

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Copy this config's SQLite database — every process row, crawl, snapshot, result, tag and
    /// installed binary, with their ids — into an empty PostgreSQL database, so that a host can
    /// move to a shared database without losing its history. abxd must be stopped; a database
    /// that holds any row is refused; nothing is written unless everything is. Then set
    /// paths.database to the URL and start abxd.
    #[command(
        after_help = "Examples:\n  sudo -u abxd abxd -c /etc/abxd/supervisor.toml store copy --to postgres://abxd@/abxd?host=/var/run/postgresql"
    )]
    Copy {
        /// The PostgreSQL database to copy into: a postgres:// URL (what it leaves out comes
        /// from PGHOST, PGPORT, PGUSER, PGDATABASE; a password from PGPASSWORD).
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// Check this config's SQLite database whole (its header, then SQLite's integrity_check of
    /// every page, table and index) and list what is wrong; exits 1 if anything is. Reads only:
    /// it may run while abxd runs.
    Check,
    /// Copy every row that can still be read from this config's damaged SQLite database into a
    /// new database at PATH (its indexes and counts made anew), saying per table how many rows
    /// were read and how many were lost; the damaged file is left as it is. abxd must be
    /// stopped. Then put PATH in the old file's place (or set paths.database to it) and start
    /// abxd.
    #[command(after_help = "Examples:
  abxd store check
  abxd store recover --to /var/lib/abxd/abxd.recovered.sqlite3")]
    Recover {
        /// The new database: a path where no file is.
        #[arg(long, value_name = "PATH")]
        to: std::path::PathBuf,
    },
    /// Write a consistent copy of this config's SQLite database to PATH (a new file), while
    /// abxd runs: everything committed when the copy began, and nothing after.
    #[command(after_help = "Examples:
  abxd store backup /var/backups/abxd.sqlite3")]
    Backup {
        /// The copy: a path where no file is.
        #[arg(value_name = "PATH")]
        to: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum MachineCommand {
    /// Forget a machine that will not come back (powered off, deleted): its work is recovered
    /// for the other hosts, as when it went silent; its process rows, shown as "unknown
    /// (machine silent since T)", are marked lost; its row leaves abxctl status. Only a machine
    /// silent for longer than the lease, never this one; no process is signalled. If it starts
    /// again, its daemon registers it again.
    Forget {
        /// The machine's id, as abxctl status and ps --machine name it.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum WorkerCommand {
    /// Run one crawl: its crawl hooks and its snapshot workers.
    Crawl { id: i64 },
    /// Run one snapshot's hooks.
    Snapshot { id: i64 },
    /// Copy a sealed crawl's snapshots into an ArchiveBox collection (`[archivebox]`).
    Export {
        crawl: i64,
        /// The collection's data dir.
        #[arg(long)]
        to: std::path::PathBuf,
        /// The ArchiveBox user the snapshots are filed under.
        #[arg(long)]
        user: String,
        /// What the crawl made replaces the files of snapshots the collection has (a redo of
        /// ArchiveBox's Snapshots), instead of leaving them as they are.
        #[arg(long, conflicts_with = "as_it_goes")]
        replace: bool,
        /// Place a started snapshot's files as its plugins end, then the rest at its seal (a
        /// crawl served from ArchiveBox's queue).
        #[arg(long)]
        as_it_goes: bool,
    },
}
