//! Messages as a stream of batches, read from a stream of entry batches (a file
//! reader's, several files' one after the other, or any Arrow stream with the
//! readers' columns).
//!
//! Each batch of messages is handed on as soon as it is finished, before the next
//! entry is read: what the stream holds is one batch, not what a whole batch of
//! entries decompresses to.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::decoder::MessageDecoder;
use crate::arrow::BatchStream;
use crate::error::{Error, Result};

pub struct MessageStream<I> {
    upstream: I,
    decoder: MessageDecoder,
    /// The entry batch being read: the batch, its first row's number, the next row.
    current: Option<(RecordBatch, u64, usize)>,
    /// Input rows read so far (entries are numbered by it in errors).
    rows: u64,
    /// The input has ended (or failed) and the decoder was finished.
    done: bool,
    /// An error to give once the rows decoded before it are out.
    failed: Option<Error>,
}

impl<I: Iterator<Item = Result<RecordBatch>>> MessageStream<I> {
    pub fn new(upstream: I, decoder: MessageDecoder) -> Self {
        MessageStream { upstream, decoder, current: None, rows: 0, done: false, failed: None }
    }

    pub fn decoder(&self) -> &MessageDecoder {
        &self.decoder
    }

    fn fail(&mut self, e: Error) {
        // The rows before the failure come out first.
        let _ = self.decoder.flush();
        self.done = true;
        self.failed = Some(e);
    }
}

impl<I: Iterator<Item = Result<RecordBatch>>> Iterator for MessageStream<I> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            if let Some(batch) = self.decoder.pop_batch() {
                return Some(Ok(batch));
            }
            if self.done {
                return self.failed.take().map(Err);
            }
            if let Some((batch, first, from)) = self.current.take() {
                match self.decoder.push_record_batch_from(&batch, first, from) {
                    Ok(next) if next < batch.num_rows() => self.current = Some((batch, first, next)),
                    Ok(_) => {}
                    Err(e) => self.fail(e),
                }
                continue;
            }
            match self.upstream.next() {
                Some(Ok(batch)) => {
                    let first = self.rows;
                    self.rows += batch.num_rows() as u64;
                    self.current = Some((batch, first, 0));
                }
                Some(Err(e)) => self.fail(e),
                None => {
                    self.done = true;
                    if let Err(e) = self.decoder.finish() {
                        self.fail(e);
                    }
                }
            }
        }
    }
}

impl<I: Iterator<Item = Result<RecordBatch>> + Send> BatchStream for MessageStream<I> {
    fn schema(&self) -> SchemaRef {
        self.decoder.schema()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::{BinaryArray, Int64Array};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;
    use crate::arrow::OnError;
    use crate::pulsar::decoder::DecoderOptions;
    use crate::pulsar::testing::{entry, metadata};

    fn input(entries: &[Vec<u8>], first_entry: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("ledger_id", DataType::Int64, true),
            Field::new("entry_id", DataType::Int64, true),
            Field::new("payload", DataType::Binary, true),
        ]));
        let n = entries.len() as i64;
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(vec![1; entries.len()])),
                Arc::new(Int64Array::from((first_entry..first_entry + n).collect::<Vec<_>>())),
                Arc::new(BinaryArray::from_iter_values(entries.iter())),
            ],
        )
        .unwrap()
    }

    #[test]
    fn each_batch_comes_out_before_the_next_entry_is_decompressed() {
        use crate::pulsar::testing::{compress, compressed};
        let n = 100_000;
        let e = entry(&compressed(metadata("p", 0, 1), 3, n), &compress(3, &vec![0u8; n]), true, None);
        let entries = vec![e; 10];
        let options = DecoderOptions { batch_bytes: n, ..Default::default() };
        let mut s = MessageStream::new(vec![Ok(input(&entries, 0))].into_iter(), MessageDecoder::new(options, HashMap::new()));
        let first = s.next().unwrap().unwrap();
        assert_eq!(first.num_rows(), 1);
        assert_eq!(s.decoder().counts().entries, 1, "the other entries wait until the batch is taken");
        let rest: Vec<usize> = s.map(|b| b.unwrap().num_rows()).collect();
        assert_eq!(rest, [1; 9]);
    }

    #[test]
    fn rows_before_a_failure_come_first() {
        let good = entry(&metadata("p", 0, 1), b"ok", true, None);
        let batches = vec![Ok(input(&[good.clone(), good.clone()], 0)), Ok(input(&[good.clone(), b"bad".to_vec()], 2))];
        let options = DecoderOptions { on_error: OnError::Raise, ..Default::default() };
        let mut s = MessageStream::new(batches.into_iter(), MessageDecoder::new(options, HashMap::new()));
        let first = s.next().unwrap().unwrap();
        assert_eq!(first.num_rows(), 3);
        let err = s.next().unwrap().unwrap_err();
        assert!(err.detail.starts_with("entry 3 (ledger 1 entry 3)"), "{err}");
        assert!(s.next().is_none());
        // Under Flag the bad entry is a row and the stream goes on.
        let batches = vec![Ok(input(&[good.clone(), b"bad".to_vec()], 0)), Ok(input(&[good], 2))];
        let s = MessageStream::new(batches.into_iter(), MessageDecoder::new(DecoderOptions::default(), HashMap::new()));
        let rows: usize = s.map(|b| b.unwrap().num_rows()).sum();
        assert_eq!(rows, 3);
    }
}
