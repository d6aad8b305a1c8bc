//! Python bindings for bkcodec-core. This crate knows Python, not byte layouts:
//! it converts arguments, releases the GIL around core calls and maps errors.

use pyo3::prelude::*;

/// Every Rust allocation of the module, including the Arrow buffers handed to
/// Python (freed by their release callbacks, so here too). mimalloc keeps freed
/// memory for the next batch, where glibc unmaps large blocks on free and every
/// batch's fresh buffers page-fault again (a 100 MB payload column: ~25,000 faults).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod buffer;
mod errors;
mod checksum;
mod ledger_id;
mod args;
mod entries;
mod entries_input;
mod entry;
mod keys;
mod lac;

// Ledger metadata, bookie ids, wire frames and metadata RPC messages.
mod bookie_id;
mod metadata;
mod rpc;
mod wire;

// Bookie files: entry logs, journals, index files, lastMark/lastId.
mod entry_log;
mod file_args;
mod file_like;
mod index_file;
mod journal;
mod last_mark;
mod record_batch_reader;

// What the core knows of its own output: schemas, error kinds, digest names.
mod formats;
// Bookies as a whole: layout, cookies, DbLedgerStorage index layouts.
mod bookie;
// Apache Pulsar: messages and topic metadata.
mod pulsar;
// Many bookies: inventories, the audit, placement.
mod cluster;
mod plan;

#[pymodule]
fn _bkcodec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    checksum::register(m)?;
    ledger_id::register(m)?;
    entry::register(m)?;
    entries::register(m)?;
    lac::register(m)?;
    keys::register(m)?;
    bookie_id::register(m)?;
    metadata::register(m)?;
    wire::register(m)?;
    rpc::register(m)?;
    m.add_class::<record_batch_reader::PyFileBatchReader>()?;
    entry_log::register(m)?;
    journal::register(m)?;
    index_file::register(m)?;
    last_mark::register(m)?;
    formats::register(m)?;
    bookie::register(m)?;
    pulsar::register(m)?;
    cluster::register(m)?;
    plan::register(m)?;
    Ok(())
}
