//! Chunked messages (PIP-37) waiting for their other chunks.
//!
//! A producer splits a large message (after compressing it) into chunks, each its
//! own entry with the same `uuid` and `num_chunks_from_msg` and its `chunk_id`.
//! Chunks of one message may be interleaved with other messages and, in a bookie,
//! found in any order (an entry log, then the journal), so they are kept by uuid
//! and chunk id until all are there. Memory is bounded: past `max_bytes` of waiting
//! chunks, the oldest incomplete messages are given up (as flagged rows).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::message_batch::EntryIds;
use super::proto::{BrokerEntryMetadata, MessageMetadata};

/// One chunk as stored, with what its row needs.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    pub ids: EntryIds,
    pub chunk_id: i32,
    pub metadata: MessageMetadata,
    pub broker: Option<BrokerEntryMetadata>,
    pub checksum_ok: Option<bool>,
    pub topic: Option<Arc<str>>,
    /// The chunk's payload bytes (compressed, as stored).
    pub data: Vec<u8>,
    /// What was already wrong with the entry (the file reader's error, a checksum mismatch).
    pub error: Option<String>,
}

struct Pending {
    num_chunks: i32,
    chunks: BTreeMap<i32, StoredChunk>,
    bytes: usize,
    /// Arrival order of the first chunk, to give up the oldest first.
    order: u64,
}

/// What adding a chunk led to.
pub enum ChunkOutcome {
    /// Every chunk is there, in chunk id order.
    Complete(Vec<StoredChunk>),
    /// Waiting for more.
    Waiting,
    /// This chunk id was already there (from another entry): the chunk is returned,
    /// with where the first copy is.
    Duplicate(Box<StoredChunk>, EntryIds),
}

pub struct ChunkTable {
    pending: HashMap<Vec<u8>, Pending>,
    bytes: usize,
    max_bytes: usize,
    next_order: u64,
}

impl ChunkTable {
    pub fn new(max_bytes: usize) -> Self {
        ChunkTable { pending: HashMap::new(), bytes: 0, max_bytes, next_order: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Adds a chunk of the message `uuid` (`num_chunks > 1`, `0 <= chunk_id < num_chunks`,
    /// checked by the caller). Incomplete messages given up on the way (a restarted
    /// message, or memory) are appended to `given_up`.
    pub fn add(
        &mut self,
        uuid: &[u8],
        num_chunks: i32,
        chunk: StoredChunk,
        given_up: &mut Vec<Vec<StoredChunk>>,
    ) -> ChunkOutcome {
        if let Some(p) = self.pending.get(uuid) {
            // A producer that resends a message starts again at chunk 0, and a
            // different chunk count cannot be the same message: the old chunks are
            // an incomplete message of their own.
            let restarted = p.num_chunks != num_chunks || (chunk.chunk_id == 0 && p.chunks.contains_key(&0));
            if restarted {
                given_up.push(self.remove(uuid));
            } else if let Some(first) = p.chunks.get(&chunk.chunk_id) {
                let at = first.ids;
                return ChunkOutcome::Duplicate(Box::new(chunk), at);
            }
        }
        let order = self.next_order;
        let p = self.pending.entry(uuid.to_vec()).or_insert_with(|| Pending {
            num_chunks,
            chunks: BTreeMap::new(),
            bytes: 0,
            order,
        });
        if p.order == order {
            self.next_order += 1;
        }
        let size = chunk.data.len();
        p.bytes += size;
        p.chunks.insert(chunk.chunk_id, chunk);
        self.bytes += size;
        if p.chunks.len() == num_chunks as usize {
            let done = self.remove(uuid);
            return ChunkOutcome::Complete(done);
        }
        while self.bytes > self.max_bytes {
            match self.oldest_except(uuid) {
                Some(old) => given_up.push(self.remove(&old)),
                None => break,
            }
        }
        if self.bytes > self.max_bytes {
            // This message alone is over the limit: give it up too.
            given_up.push(self.remove(uuid));
        }
        ChunkOutcome::Waiting
    }

    fn oldest_except(&self, uuid: &[u8]) -> Option<Vec<u8>> {
        self.pending.iter().filter(|(k, _)| k.as_slice() != uuid).min_by_key(|(_, p)| p.order).map(|(k, _)| k.clone())
    }

    fn remove(&mut self, uuid: &[u8]) -> Vec<StoredChunk> {
        match self.pending.remove(uuid) {
            Some(p) => {
                self.bytes -= p.bytes;
                p.chunks.into_values().collect()
            }
            None => Vec::new(),
        }
    }

    /// Every incomplete message, oldest first.
    pub fn drain(&mut self) -> Vec<Vec<StoredChunk>> {
        let mut all: Vec<(u64, Vec<u8>)> = self.pending.iter().map(|(k, p)| (p.order, k.clone())).collect();
        all.sort();
        all.into_iter().map(|(_, k)| self.remove(&k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(entry: i64, id: i32, data: &[u8]) -> StoredChunk {
        StoredChunk {
            ids: EntryIds { scope_id: None, ledger_id: Some(1), entry_id: Some(entry) },
            chunk_id: id,
            metadata: MessageMetadata::default(),
            broker: None,
            checksum_ok: Some(true),
            topic: None,
            data: data.to_vec(),
            error: None,
        }
    }

    #[test]
    fn completes_in_any_order_and_interleaved() {
        let mut t = ChunkTable::new(1 << 20);
        let mut gone = Vec::new();
        assert!(matches!(t.add(b"a", 3, chunk(0, 2, b"c"), &mut gone), ChunkOutcome::Waiting));
        assert!(matches!(t.add(b"b", 2, chunk(1, 0, b"x"), &mut gone), ChunkOutcome::Waiting));
        assert!(matches!(t.add(b"a", 3, chunk(2, 0, b"a"), &mut gone), ChunkOutcome::Waiting));
        match t.add(b"a", 3, chunk(3, 1, b"b"), &mut gone) {
            ChunkOutcome::Complete(c) => {
                let ids: Vec<i32> = c.iter().map(|c| c.chunk_id).collect();
                assert_eq!(ids, [0, 1, 2]);
            }
            _ => panic!("not complete"),
        }
        assert!(gone.is_empty());
        let left = t.drain();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0][0].data, b"x");
        assert!(t.is_empty());
    }

    #[test]
    fn duplicates_restarts_and_memory_limits() {
        let mut t = ChunkTable::new(10);
        let mut gone = Vec::new();
        t.add(b"a", 3, chunk(0, 0, b"12"), &mut gone);
        t.add(b"a", 3, chunk(1, 1, b"34"), &mut gone);
        match t.add(b"a", 3, chunk(7, 1, b"34"), &mut gone) {
            ChunkOutcome::Duplicate(c, first) => {
                assert_eq!(c.ids.entry_id, Some(7));
                assert_eq!(first.entry_id, Some(1));
            }
            _ => panic!("not a duplicate"),
        }
        // Chunk 0 again: the producer started over.
        t.add(b"a", 3, chunk(8, 0, b"12"), &mut gone);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].len(), 2);
        // Past the limit, the oldest message is given up.
        t.add(b"b", 2, chunk(9, 0, b"123456789"), &mut gone);
        assert_eq!(gone.len(), 2);
        assert_eq!(gone[1][0].ids.entry_id, Some(8));
        // A single message over the limit is given up at once.
        t.add(b"c", 2, chunk(10, 0, b"12345678901"), &mut gone);
        assert_eq!(gone.len(), 4, "b then c");
        assert!(t.is_empty());
    }
}
