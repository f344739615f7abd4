//! Parallel deflate that still emits one standard gzip member, pigz style.
//!
//! The input is cut into fixed-size pieces by offset alone ([`chunk_len`]:
//! 1 MiB, or [`LEVEL_ONE_CHUNK`] at level 1, so that small inputs still
//! spread over the threads and the pipeline drains quickly), each
//! compressed by its own deflate stream on a pool of threads and ended on a
//! byte boundary (the last one with the final block; see [`crate::chunk_deflate`]
//! for the backend and for chunks stored as they are); the
//! pieces are concatenated in order behind one gzip header, and the trailer
//! carries the combined CRC-32 and ISIZE. Chunk boundaries never depend on the
//! thread count or on how callers split their writes, so any `--threads`
//! gives byte-identical output. The writer stage (which hashes) runs on its
//! own thread, overlapped with compression; memory holds a bounded number of
//! chunks in flight. Their buffers go round: a worker hands a chunk's input
//! buffer back to the framing side, and the writer a compressed one back to
//! the workers, so the pipeline does not fault in fresh memory per chunk.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

use flate2::Crc;

use neff_schema::framing::Deflate;

use crate::chunk_deflate::ChunkDeflater;

/// Input bytes per independently compressed chunk at levels 2 to 9.
pub const CHUNK: usize = 1 << 20;

/// Input bytes per chunk at level 1, where deflate is fast and a chunk's
/// latency shows (0.7% more output than 1 MiB chunks on small members).
pub const LEVEL_ONE_CHUNK: usize = 256 << 10;

/// Input bytes per chunk of `deflate`'s stream.
pub fn chunk_len(deflate: Deflate) -> usize {
    if deflate.level == 1 {
        LEVEL_ONE_CHUNK
    } else {
        CHUNK
    }
}

struct Job {
    seq: u64,
    data: Vec<u8>,
    last: bool,
}

struct Done {
    seq: u64,
    compressed: Vec<u8>,
    crc: Crc,
    last: bool,
}

/// The compressing front of the pipeline: implements [`Write`] for the tar
/// framing, and hands full chunks to the worker threads.
pub struct ChunkSink<'scope, W: Write + Send + 'scope> {
    pending: Vec<u8>,
    /// Input buffers the workers are done with.
    spare_inputs: Receiver<Vec<u8>>,
    /// Input bytes per chunk.
    chunk: usize,
    seq: u64,
    jobs: Option<SyncSender<Job>>,
    writer: Option<ScopedJoinHandle<'scope, io::Result<W>>>,
    workers: Vec<ScopedJoinHandle<'scope, ()>>,
}

impl<W: Write + Send> std::fmt::Debug for ChunkSink<'_, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkSink")
            .field("pending", &self.pending.len())
            .field("seq", &self.seq)
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

/// Starts the pipeline inside `scope`: `threads` compressors (at least 1) of
/// `deflate`'s engine and level, and a writer thread that writes the gzip member, behind `header`,
/// into `out`.
pub fn start<'scope, 'env, W: Write + Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    out: W,
    header: Vec<u8>,
    deflate: Deflate,
    threads: usize,
) -> ChunkSink<'scope, W> {
    let threads = threads.max(1);
    let (job_tx, job_rx) = sync_channel::<Job>(threads);
    let (done_tx, done_rx) = sync_channel::<Done>(threads);
    let (spare_in_tx, spare_in_rx) = channel::<Vec<u8>>();
    let (spare_out_tx, spare_out_rx) = channel::<Vec<u8>>();
    let job_rx = Arc::new(Mutex::new(job_rx));
    let spare_out_rx = Arc::new(Mutex::new(spare_out_rx));
    let workers = (0..threads)
        .map(|_| {
            let buffers = Buffers {
                jobs: Arc::clone(&job_rx),
                done: done_tx.clone(),
                spare_inputs: spare_in_tx.clone(),
                spare_outputs: Arc::clone(&spare_out_rx),
            };
            scope.spawn(move || compress_jobs(&buffers, deflate))
        })
        .collect();
    drop(done_tx);
    let writer = scope.spawn(move || write_member(out, &header, &done_rx, &spare_out_tx));
    let chunk = chunk_len(deflate);
    ChunkSink {
        pending: Vec::with_capacity(chunk),
        spare_inputs: spare_in_rx,
        chunk,
        seq: 0,
        jobs: Some(job_tx),
        writer: Some(writer),
        workers,
    }
}

/// A worker's ends of the pipeline.
struct Buffers {
    jobs: Arc<Mutex<Receiver<Job>>>,
    done: SyncSender<Done>,
    /// Where a chunk's input buffer goes back to the framing side.
    spare_inputs: Sender<Vec<u8>>,
    /// Compressed buffers the writer is done with.
    spare_outputs: Arc<Mutex<Receiver<Vec<u8>>>>,
}

/// A worker: compresses chunks until the job channel closes.
fn compress_jobs(buffers: &Buffers, deflate: Deflate) {
    let mut deflater = ChunkDeflater::new(deflate);
    loop {
        let job = match buffers.jobs.lock() {
            Ok(rx) => rx.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let mut crc = Crc::new();
        crc.update(&job.data);
        let mut compressed = match buffers.spare_outputs.lock() {
            Ok(rx) => rx.try_recv().unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        deflater.deflate_into(&job.data, job.last, &mut compressed);
        // The framing side may be gone already; the buffer is then dropped.
        let _ = buffers.spare_inputs.send(job.data);
        if buffers
            .done
            .send(Done {
                seq: job.seq,
                compressed,
                crc,
                last: job.last,
            })
            .is_err()
        {
            return;
        }
    }
}

/// The writer stage: gzip header, chunks in order, trailer.
fn write_member<W: Write>(
    mut out: W,
    header: &[u8],
    done: &Receiver<Done>,
    spare_outputs: &Sender<Vec<u8>>,
) -> io::Result<W> {
    out.write_all(header)?;
    let mut crc = Crc::new();
    let mut next = 0u64;
    let mut waiting: BTreeMap<u64, Done> = BTreeMap::new();
    loop {
        let Ok(d) = done.recv() else {
            return Err(io::Error::other(
                "the compression pipeline stopped before its last chunk",
            ));
        };
        waiting.insert(d.seq, d);
        while let Some(d) = waiting.remove(&next) {
            out.write_all(&d.compressed)?;
            crc.combine(&d.crc);
            // The workers may be gone already; the buffer is then dropped.
            let _ = spare_outputs.send(d.compressed);
            next += 1;
            if d.last {
                out.write_all(&crc.sum().to_le_bytes())?;
                out.write_all(&crc.amount().to_le_bytes())?;
                out.flush()?;
                return Ok(out);
            }
        }
    }
}

impl<'scope, W: Write + Send + 'scope> ChunkSink<'scope, W> {
    fn dispatch(&mut self, last: bool) -> io::Result<()> {
        let next = match last {
            true => Vec::new(),
            false => self.spare_inputs.try_recv().map_or_else(
                |_| Vec::with_capacity(self.chunk),
                |mut spare| {
                    spare.clear();
                    spare
                },
            ),
        };
        let data = std::mem::replace(&mut self.pending, next);
        let job = Job {
            seq: self.seq,
            data,
            last,
        };
        self.seq += 1;
        let sent = self
            .jobs
            .as_ref()
            .map(|tx| tx.send(job).is_ok())
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            // The writer stopped (an I/O error): report its error.
            Err(self
                .stop()
                .err()
                .unwrap_or_else(|| io::Error::other("the compression pipeline stopped")))
        }
    }

    /// Closes the job queue and joins every thread; the writer's result.
    fn stop(&mut self) -> io::Result<W> {
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        match self.writer.take().map(|w| w.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the gzip writer thread panicked")),
            None => Err(io::Error::other("the compression pipeline already stopped")),
        }
    }

    /// Compresses what is left as the last chunk, waits for the writer, and
    /// returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.dispatch(true)?;
        self.stop()
    }
}

impl<'scope, W: Write + Send + 'scope> Write for ChunkSink<'scope, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.len() == self.chunk {
            self.dispatch(false)?;
        }
        let take = buf.len().min(self.chunk - self.pending.len());
        self.pending.extend_from_slice(&buf[..take]);
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'scope, W: Write + Send + 'scope> Drop for ChunkSink<'scope, W> {
    fn drop(&mut self) {
        // An abandoned pipeline (an error upstream): close the queue so the
        // threads end; the scope joins them.
        self.jobs = None;
    }
}

#[cfg(test)]
mod tests {
    use crate::gzip_writer::GZIP_HEADER;
    use neff_schema::framing::DeflateEngine;

    /// The default engine at `level` (libdeflate at 1, zlib-rs above).
    fn at(level: u32) -> Deflate {
        Deflate {
            engine: DeflateEngine::ParallelLibdeflate,
            level: 1,
            mem_level: 8,
        }
        .with_level(level)
    }

    /// zlib-rs at level 1 (the engine before libdeflate).
    const ZLIB_RS_ONE: Deflate = Deflate {
        engine: DeflateEngine::Parallel,
        level: 1,
        mem_level: 8,
    };

    /// Compresses `data` with the pipeline into a Vec (for tests and small inputs).
    fn compress_to_vec(data: &[u8], deflate: Deflate, threads: usize) -> io::Result<Vec<u8>> {
        std::thread::scope(|scope| {
            let mut sink = start(scope, Vec::new(), GZIP_HEADER.to_vec(), deflate, threads);
            sink.write_all(data)?;
            sink.finish()
        })
    }
    use super::*;
    use std::io::Read;

    fn sample(len: usize) -> Vec<u8> {
        let mut state = 0x1234_5678u64;
        (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if i % 3 == 0 {
                    state as u8
                } else {
                    (i / 7) as u8
                }
            })
            .collect()
    }

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut d = flate2::read::GzDecoder::new(gz);
        d.read_to_end(&mut out).unwrap();
        // One member: nothing follows it.
        assert!(d.into_inner().is_empty());
        out
    }

    /// Weight-like input: f32 values of a roughly normal distribution
    /// rounded to bf16 precision (the low 16 bits zero), as in the bench.
    fn weights(len: usize) -> Vec<u8> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut out = Vec::with_capacity(len + 4);
        while out.len() < len {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let sum: u64 = (0..4).map(|i| (state >> (16 * i)) & 0xFFFF).sum();
            let value = (sum as f32 - 131_070.0) * (0.02 / 37_837.0);
            let bits = value.to_bits();
            let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1)) & 0xFFFF_0000;
            out.extend_from_slice(&rounded.to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// Random bytes, then weights, then text-like bytes: one chunk of each
    /// kind at least, and a short last chunk.
    fn mixed(len: usize) -> Vec<u8> {
        let mut data: Vec<u8> = sample(3 * len / 2)
            .into_iter()
            .step_by(3)
            .take(len / 2)
            .collect();
        data.extend(weights(len / 3));
        data.extend(sample(len - data.len()));
        data
    }

    /// Compresses `data` with the pipeline, written in `piece`-byte writes.
    fn compress_in_pieces(data: &[u8], deflate: Deflate, threads: usize, piece: usize) -> Vec<u8> {
        std::thread::scope(|scope| {
            let mut sink = start(scope, Vec::new(), GZIP_HEADER.to_vec(), deflate, threads);
            for piece in data.chunks(piece) {
                sink.write_all(piece).unwrap();
            }
            sink.finish().unwrap()
        })
    }

    #[test]
    fn any_thread_count_gives_the_same_single_member() {
        let small = LEVEL_ONE_CHUNK;
        for len in [
            0,
            1,
            small - 1,
            small,
            small + 1,
            CHUNK,
            CHUNK + 1,
            3 * CHUNK + 12345,
        ] {
            let data = sample(len);
            for deflate in [at(1), ZLIB_RS_ONE] {
                let one = compress_to_vec(&data, deflate, 1).unwrap();
                assert_eq!(&one[..10], &GZIP_HEADER);
                assert_eq!(gunzip(&one), data, "len {len}");
                for threads in [2, 3, 8] {
                    assert_eq!(
                        compress_to_vec(&data, deflate, threads).unwrap(),
                        one,
                        "len {len} threads {threads} {deflate:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn output_depends_on_neither_threads_nor_write_sizes_at_any_level() {
        let data = mixed(5 * CHUNK + 999);
        for deflate in [at(1), ZLIB_RS_ONE, at(6), at(9)] {
            let level = deflate.level;
            let whole = compress_to_vec(&data, deflate, 1).unwrap();
            assert_eq!(gunzip(&whole), data, "level {level}");
            for (threads, piece) in [(2, 7777), (5, CHUNK + 3), (2, 1 << 16), (5, 100_003)] {
                assert_eq!(
                    compress_in_pieces(&data, deflate, threads, piece),
                    whole,
                    "level {level}, {threads} threads, {piece}-byte writes"
                );
            }
        }
    }

    #[test]
    fn output_bytes_are_pinned_per_level() {
        // The same bytes on every machine and release: a backend update or a
        // CPU-specific path that changes them must show up here.
        use md5::{Digest, Md5};
        let data = mixed(3 * CHUNK + 4321);
        let got: Vec<String> = [at(1), ZLIB_RS_ONE, at(6), at(9)]
            .into_iter()
            .map(|deflate| {
                let digest = Md5::digest(compress_to_vec(&data, deflate, 2).unwrap());
                digest.iter().map(|b| format!("{b:02x}")).collect()
            })
            .collect();
        assert_eq!(
            got,
            [
                "9c9eec9792e8845ff47ad67ef970a106",
                "6676211ccd4f04668f96e437cab0c2b0",
                "c891242dd77ef28249b30cd7b4c5f5ba",
                "661703313d13637606c89411d1a47906"
            ]
        );
    }

    #[test]
    fn levels_one_and_six_are_no_larger_than_classic_zlib() {
        // What pigz -1 / -6 get (classic zlib, one stream: no chunk resets).
        let data = mixed(4 * CHUNK);
        for level in [1, 6] {
            let mut zlib =
                crate::zlib_gzip::ZlibGzipWriter::new(Vec::new(), &GZIP_HEADER, level, 8).unwrap();
            zlib.write_all(&data).unwrap();
            let zlib = zlib.finish().unwrap().len();
            let ours = compress_to_vec(&data, at(level), 2).unwrap().len();
            assert!(
                ours <= zlib,
                "level {level}: {ours} bytes against zlib's {zlib}"
            );
        }
    }

    #[derive(Debug)]
    struct FailingWriter;

    impl Write for FailingWriter {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_error_stops_the_pipeline_with_that_error() {
        let data = sample(5 * CHUNK);
        let err = std::thread::scope(|scope| {
            let mut sink = start(scope, FailingWriter, GZIP_HEADER.to_vec(), at(1), 2);
            let written = sink.write_all(&data);
            match written {
                Err(e) => e,
                Ok(()) => sink.finish().unwrap_err(),
            }
        });
        assert!(err.to_string().contains("disk full"), "{err}");
    }
}
