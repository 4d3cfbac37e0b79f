// Package file reads one feed's log file: it splits it into lines (split.go),
// keeps each line's byte position, and follows the file through rotation,
// truncation, replacement and deletion without losing or repeating a line
// it could have kept (DESIGN §4). One Source runs one goroutine per feed;
// readers (reader.go) are its open files.
//
// # Files and epochs
//
// A reader is one open descriptor with the identity it was opened under
// (device + inode, and the file key FNV-1a(dev, ino) stored in the pointer),
// its epoch, a read buffer and its own splitter. Every line carries
// (epoch, position): the position is the byte offset just after its
// terminator in that file, so a position means nothing under another epoch.
// Every file the source starts reading from 0 gets a new random epoch: a
// rotated-in file, a file truncated or rewritten in place, a file that
// appears after the path was missing. Only the same bytes under a new file
// key (a copy-up, a rename of the same bytes plus appended ones onto the
// path) keep the epoch and the position.
//
// The source holds up to three kinds of readers:
//
//	cur   the file being read, positioned (its lines may move the pointer)
//	next  files the path named after a rotation, opened at once (the
//	      descriptor pins them) and queued in the order they were seen
//	old   switched-away files, watched for rotateWaitMillis (longer while they
//	      grow); their new lines are delivered without a position
//	      (downgraded), under an epoch of their own (fresh at the switch,
//	      never in a pointer) and with their real byte position in that
//	      file, so (feed, epoch, position) names one line for every sink.
//	      One exception: the file that holds the pointer, left because the
//	      path stayed missing (no file took the pointer), stays positioned
//	      under the pointer's epoch until a new file's barrier Reset
//
// # The duty cycle
//
// Run repeats these steps; only step 8 sleeps.
//
//  1. Commit: poll the subscribers' ack points; store the acknowledged
//     position into the pointer mapping when it belongs to the pointer's
//     epoch; msync at most every commitSyncMillis, on a goroutine of its
//     own so that a slow disk does not delay reading (commit.go).
//  2. Poll, when an fsnotify event arrived or pollIntervalMillis passed since
//     the last one (also while paused, at the barrier and while busy
//     reading): check the open file (below) and read the old files.
//  3. Publish the pending batch. Refused (a queue is full, the window is
//     full, a subscriber holds the pointer): keep it, go to 8.
//  4. Epoch barrier: a file switched to under a new epoch publishes nothing
//     until every line of the previous epoch is acknowledged; then the
//     pointer is Reset to (new epoch, file key, fingerprint, 0). Not yet:
//     go to 8.
//  5. No file open: WAITING_FOR_FILE; open the path if it names a file
//     (new epoch, behind the barrier), else go to 8.
//  6. Batch complete lines already read, or read the next chunk
//     (BEHIND before the read position moves).
//  7. At the end of the file (a read returned nothing): check, then
//     switch to the next file if one is due, close a file whose path stayed
//     missing, read the old files; otherwise CAUGHT_UP (the path was
//     checked to name the open file just before).
//  8. Wait for a subscriber's wake-up, an fsnotify event, the next poll, a
//     due msync, or the stop.
//
// # The check
//
// check runs at every poll and at every end of the file before CAUGHT_UP:
//
//   - fstat the open descriptor: shorter than the read position means
//     truncated; a size or mtime changed since the last check re-verifies
//     the fingerprint of the first bytes (up to 4 KiB) through the
//     descriptor, so a truncation followed by quick regrowth past the read
//     position is caught unless the new first bytes equal the old. A WARN
//     and the feed's detail give the reason. If the directory holds a copy
//     of the old content (below), the copy becomes the current file at the
//     consumed position under the same epoch, and the file at the path is
//     queued. Otherwise the file is marked gone: read no further, its lines
//     already read are still published, and the pointer stops growing its
//     fingerprint from it (Bind(nil)): the bytes the descriptor shows now
//     are not the epoch's.
//   - fstat the queued files the same way: one truncated before it was
//     read (a second copytruncate while the first copy is still read) gets
//     its copy queued before it.
//   - stat the path. Missing: not a change (a rotation may be in
//     progress). Naming the open file (and not gone), or a file already
//     queued: nothing to do. Otherwise open it (the open race below) and
//     queue it.
//
// A copy is a regular file in the path's directory with the same
// fingerprinted first bytes, at least as long as what was consumed, modified
// no later than the truncation was noticed (copytruncate finishes the copy
// before it truncates; a file written after that is not a snapshot of the
// old content), and not one of the daemon's own outputs (Config.Outputs:
// file-sink outputs and dataDir, by path or by identity). The newest such
// file wins. A copy is a snapshot: it is read up to the size it had when
// found, then closed; it is never watched as a switched-away file. (Without
// these rules a file sink writing next to its input was taken for the copy
// of a truncated input, and the sink's every new line was read back,
// downgraded, and written again.) The truncated file's own mtime would be a
// sharper bound, but a check can run while truncate(2) is still in the
// kernel and see the new size with the old mtime (seen on ext4, Linux 6.18),
// which rejected the real copy; the time the truncation was noticed has no
// such race.
//
// check never switches files. The switch happens at the end of the current
// file (step 7), so every line read from it is published first:
//
//   - current file gone (truncated, rewritten): switch at once;
//   - otherwise when the next file has bytes, or rotateWaitMillis passed
//     both since the rotation was noticed and since the current file last
//     grew. The look at the next file comes first, then one last read of
//     the current one: a writer that moved on to the next file had finished
//     the old one, so its last lines are read there with their positions
//     rather than downgraded.
//
// A file left for good (switched away from, closed after its path stayed
// missing, closed after its watch) has its buffer split as final first: a
// last line ended by a lone '\r', which a tailing read keeps waiting for
// the byte after it, is delivered (positioned when the file was current,
// downgraded when it was switched away). A '\n' that arrives later right
// after that '\r' completes its terminator and is skipped, not taken for an
// empty line; the line's position is then the offset after the '\r'. The
// same holds after a restart: the pointer may sit just after that '\r', and
// a reader positioned at an offset whose preceding byte (read through the
// descriptor) is a '\r' skips a '\n' found there.
//
// The file switched to is compared with the old one: a different key, the
// same fingerprinted first bytes and a size no smaller than what was
// consumed is the same file (WARN, same epoch, reading on from the position
// after the last complete line, so a partial line is read again from its
// start). The old descriptor is retired like any switched-away file (the
// application may still append to it) under a fresh epoch of its own: the
// new file carries on the old epoch and positions, and (epoch, position)
// must name one line. A partial line pending in the old file at the switch
// is read again by the new file from its start, and stays the old file's
// too: the two files may end it differently (cp A A.tmp; echo >> A.tmp
// ends it in the copy, the application ends it in the old inode). Once the
// old file ends it, the line is left to the new file if the new file holds
// it byte for byte, terminator included, at the same offset (one line,
// delivered once, positioned); otherwise the old file delivers its line
// whole, downgraded ("xy" from the copy and "xyw" from the old inode: each
// file's own line, never "w" alone). Anything else
// is read from 0 under a new epoch behind the barrier; the old file is
// retired to the old list (or closed when its content was gone, or when it
// was a copy).
//
// # Cases
//
//	A  Rename rotation (mv A A.1; new A). The path names a new file: queued.
//	   A.1 is read to its end, lines written to it after the rename
//	   included; then A from 0 under a new epoch once A has bytes (or after
//	   rotateWait). Lines of A.1 still in flight are delivered; the barrier
//	   holds A's first line until they are all acknowledged, so their
//	   acknowledgements never reach A's pointer. Lines appended to A.1 after
//	   the switch are delivered without a position and counted in
//	   downgraded. Several rotations before the switch queue several files,
//	   read in order.
//	B  Truncation in place (truncate -s0, > A). fstat shows a size below the
//	   read position (or, regrown, other first bytes; or, rewritten to the
//	   same size, a new mtime and other first bytes): WARN, detail, the rest
//	   of what was read is published, then the same path is read from 0
//	   under a new epoch. Bytes seen past the read position are lost and
//	   counted (lostTails + 1, lostBytes). Until a check re-read the first
//	   bytes after the mtime moved, the report is not CAUGHT_UP.
//	C  Replacement (mv B A with other content, or other bytes written over
//	   A in place). As A (other inode) or B (same inode).
//	D  Same content under a new key (cp A A.tmp; echo more >> A.tmp; mv
//	   A.tmp A; or a copy-up). Kept: same epoch and position, WARN. Lines
//	   the application appends to the old inode after the switch are
//	   delivered downgraded, under a fresh epoch, while it is watched.
//	E  Deletion. The open file is read to its end (a writer still holding
//	   it may go on appending); rotateWait after the path was seen missing
//	   and after the file last grew, it leaves cur and the state is
//	   WAITING_FOR_FILE. A file created at the path later is read from 0
//	   under a new epoch, without a restart. The file that holds the
//	   pointer stays watched under the pointer's epoch, positioned (leave):
//	   renamed away, a restart would resume it at the pointer, so its late
//	   lines must not be delivered under another id first; it is downgraded
//	   only when a new file takes the pointer (the barrier's Reset). A
//	   deleted file (st_nlink 0) holding the pointer, read to its end with
//	   no partial line and every line acknowledged, is forgotten at once,
//	   open or closed, or at the stop: the pointer is Reset to an empty
//	   record under a new epoch (forget.go), so a restart that cannot find
//	   it counts nothing. From the moment the deletion is seen until then
//	   the feed is not settled. A stop at the epoch barrier with every old
//	   line committed finishes the barrier's Reset (barrierAtClose).
//	F  copytruncate (cp A A.1; truncate A). B, except that A.1 is found as
//	   the copy: what was not read of A is read from A.1 (same epoch, same
//	   positions), then A from its start. Only the lines written between
//	   the copy and the truncate that were not read are lost (below). The
//	   same holds across a restart: a pointer file shorter than the offset
//	   (or rewritten) with a copy in the directory is read from the copy
//	   first.
//	G  Restart after rotation (generations.go). At open the path names a
//	   file other than the pointer's, or the pointer's file shrank or changed
//	   its first bytes: the pointer's generation is searched for beside the
//	   path and beside a symlinked path's final target (genDirs): the file
//	   key with a matching fingerprint, else (a copy) a plain file or a .gz
//	   whose first (decompressed) bytes match and that holds the offset;
//	   found, it is read from the offset to its end under the pointer's
//	   epoch (a .gz through gzip, the bytes before the offset decompressed
//	   and discarded; the pointer's fingerprint is read from its first
//	   decompressed bytes). Not found: WARN, detail "rotated file gone; its
//	   unread tail is lost" until the next restart, lostTails + 1 (lossless
//	   false); a truncation found at open with no copy counts so only when
//	   the pointer was past 0 (even after a clean stop: what was written
//	   after it may have been cut), then it is read from 0 under a new epoch. Then the later generations: files matching rotatedNames,
//	   modified at or after the reference minus 2 s (the pointer's
//	   generation's mtime; when it is gone or the record empty, the pointer
//	   file's), not created before the pointer's own file when found by
//	   its key and modified before it (statx btime, where reported: an
//	   earlier generation within the slack; a copy or .gz of it is born
//	   too late to bound; a copytruncate's original, born before its
//	   copies, refilled after them, is modified later: read), other
//	   than the pointer's generation and the file at the path; a .gz whose
//	   plain twin is read instead (the file of its name holding every first
//	   byte it decompresses to, a generation name or a glob file: another
//	   file of its name, or a twin nobody reads, leaves it in), or that
//	   does not end cleanly, is left out. They are
//	   queued oldest first (ties by rank: a higher number, an earlier date
//	   first), each read from 0 under a new epoch behind the barrier, then
//	   the file at the path. With no pointer's generation, the first of them
//	   is current under a new epoch at once. Each is opened by its identity:
//	   renamed on since the scan (a rotation running meanwhile) it is found
//	   under its new name; gone, it counts one lost tail (genUnread).
//	   An empty record (a file forgotten, or a tail counted lost) is scanned
//	   from the pointer file's mtime, the moment it was emptied; the file it
//	   was emptied for, compressed or copied under a generation's name
//	   within the 2 s slack, is recognised by the epochs file's line for the
//	   record's epoch (previousFingerprint, previousOffset) and not read
//	   again: a generation whose (decompressed) first bytes match and whose
//	   size is at most that end. Longer (lines appended after it was
//	   forgotten) it is read again: duplicates. With no epochs file every
//	   generation is read (duplicates).
//	   A lost tail counted at open with nothing else to open (no file at the
//	   path, no generation) Resets the pointer to an empty record under a
//	   new epoch (epochs reason "lost"), after the ledger entry: the next
//	   restart does not count it again. A kill -9 between the two counts it
//	   twice (never not at all); a file opened instead moves the pointer by
//	   its own Reset (replaced, or the barrier's), with the same window.
//	   A .gz whose first decompressed bytes are the pointer's (or too few to
//	   tell, modified within the bound), with no plain twin and not ending
//	   cleanly, is waited for before the open decides (STARTING, not
//	   settled): until it ends cleanly, is gone, or does not grow for
//	   max(rotateWaitMillis, 10 s). Then it is read from the pointer as
//	   above; still torn, its tail counts lost, once.
//	I  Generations while running. When check finds the path naming a file
//	   the source does not hold, the same scan runs before that file is
//	   queued: reference the newest file held (its mtime at the last look),
//	   and only generations the source never saw (genSeen: the identities of
//	   every generation present at open and at each such scan, of every file
//	   it held, and the first bytes of each plain one — taken again when a
//	   file held is closed for good — so a .gz of a file it saw is its twin
//	   and skipped). They are
//	   queued before the file at the
//	   path. The same runs when a file appears at the path while none is
//	   open. A .gz skipped because it did not end cleanly is looked at again
//	   at every poll; once whole it is read beside the current file as a
//	   switched-away file is (its place in the order is past): downgraded,
//	   under an epoch of its own. While one is waited for the feed is BEHIND
//	   (never CAUGHT_UP nor WAITING_FOR_FILE, so never settled; the report
//	   sees TornPending). Renamed on (logrotate's shift) it is followed to
//	   its new name, its twin looked for there. One that is gone with no
//	   plain twin (not renamed to another generation name), or that does
//	   not grow for
//	   max(rotateWaitMillis, 10 s) while still torn, counts one lost tail
//	   (lostBytes unknown) and is no longer waited for: if it ends cleanly
//	   later it is not read (counted, never silent).
//	   genSeen is bounded: past 4096 entries, those of files neither held
//	   nor on disk at the last scan are dropped, the longest gone first; an
//	   entry of a file still on disk is never dropped (it would be read
//	   again as never seen), so the map holds max(2048, the generations on
//	   disk) entries.
//	H  The open race. Every open stats the path, opens it, fstats the
//	   descriptor and stats the path again; unless all three agree the file
//	   is closed and the open retried, so a descriptor is never labelled
//	   with another file's identity.
//	I  A path that is not a regular file (a directory, a FIFO, a socket, a
//	   device, a symlink loop). Never opened for reading: the stat comes
//	   first and the open is non-blocking with an fstat check, so a FIFO
//	   cannot block the source. FAILED, the reason in the detail, one ERROR
//	   per reason; a file left open is read on (as at a deletion, E); a
//	   regular file at the path (or nothing) ends the failure.
//
// A partial line (bytes after the last terminator) belongs to its reader:
// it is never glued to bytes of another file, and at a reopen of the same
// content it is read again from its start, once.
//
// # Wake-ups
//
// fsnotify watches the file's directory (a watch on the file itself would
// follow the inode away at a rename), and the target's directory too when
// the path is a symlink at start (a retargeted symlink is followed by the
// checks, its new directory only by polling); a directory that does not
// exist yet is watched once it does. Events naming the path (or the
// symlink's target) wake the source; while a rotation is in progress (the open file is not at the
// path, files are queued, old files watched, or the path is missing) any
// event in the directory does, since the writer may append to a renamed
// file. An event is a hint, sent without blocking into a channel of one;
// pollIntervalMillis covers file systems where events never arrive (NFS,
// some FUSE and container overlays) and Config.NoNotify
// (TAILFEED_NO_FSNOTIFY=1). An idle, caught-up feed does one fstat and one
// stat per poll interval and nothing else.
//
// # Known limitations
//
//   - copytruncate loses the lines written between the copy and the
//     truncate that the source had not read yet: they are in neither the
//     copy nor the truncated file. Where the source saw the file (at a
//     check) larger than the copy turned out to be, the difference is
//     counted (lostTails + 1, lostBytes); a truncation with no copy found
//     counts the size last seen minus the read position. Lines written and
//     cut between two looks are seen by nobody and not counted: the source
//     looks within its wake-up latency (fsnotify: well under a millisecond
//     when idle; otherwise the poll interval), which bounds that window but
//     cannot close it. A copy that is compressed and its plain file deleted
//     before the source looks is found as the .gz (readCopy, and for a
//     queued file rewrittenUnread, through findGzCopy); one compressed in a
//     format not read (bz2, xz, zstd) is not: then all that was unread is
//     lost, counted only where the source saw it. Use rename rotation
//     (create) where possible.
//   - A rewrite in place whose first bytes (up to 4 KiB) are unchanged, or
//     that leaves the size and the mtime as they were (a write within one
//     tick of the file system's timestamp clock), is not seen. Other bytes
//     written over the start while the source is behind count what it saw
//     past its read position as lost, though the rest may have survived
//     (it is read again from 0 under a new epoch).
//   - The copy is recognised by its first bytes (up to 4 KiB), its length
//     and its mtime only: another file in the directory starting with the
//     same bytes, at least as long and not modified since the truncation was
//     noticed (a manual backup, an output of another program that is not
//     declared) is taken for the copy
//     when it is the newest; from the consumed position up to its size when
//     found it is read as the file's content. The daemon's own outputs are
//     never taken (Config.Outputs).
//   - A truncation followed by regrowth past the read position with the same
//     first bytes (up to 4 KiB) before the source looks is taken for
//     appends: the source reads on from its old position, skipping the new
//     bytes before it.
//   - Generations are found only under names rotatedNames matches, beside
//     the path or a symlink's target (not logrotate's olddir). A generation
//     modified within 2 s before the reference and created after the
//     pointer's file (or on a file system without birth times) is read
//     again: a duplicate, never a gap.
//   - A deleted file whose inode number is reused by the file created at the
//     path while the daemon was stopped looks like the same file truncated
//     or rewritten: it is read from 0 under a new epoch and counted as a
//     truncation at restart (lostTails + 1), whether or not the old file had
//     an unread tail.
//   - Lines appended to a rotated file after the switch have no position:
//     the pointer has moved to the new file, so they are read only while
//     this run watches the old file. A stop or a kill -9 before they were
//     delivered loses them, uncounted; an exactlyOnce sink cannot skip them
//     (they are delivered at most once).
//   - A switched-away file is closed rotateWaitMillis after its last growth;
//     a writer appending to it later is not read.
//   - Lines a writer appends to a deleted file after it was forgotten are
//     downgraded: a kill -9 before they are acknowledged loses them,
//     uncounted.
//   - A file renamed away, closed, and deleted while nothing watched it is
//     counted as a lost tail at the next restart (lostTails + 1): nothing
//     shows that no line was appended to it after it was closed.
//   - A truncation to a size between the read position and the first 4 KiB
//     fingerprinted goes down the "replaced in place" path: it counts the
//     size last seen minus the read position as lost, though the bytes up to
//     the new size may have survived (an overcount; the fingerprint covers
//     more bytes than the file now has, so the prefix cannot be verified).
//   - A live truncation counted lost (losses ledger) and then a kill -9
//     before the new epoch's barrier is crossed is counted again at the
//     restart: the pointer still names the truncated file past its size.
//     Two ledger entries for one loss (an overcount, never a miss).
//
// Checks while running (decisions where the contract is silent):
//   - Bytes read past the size the last check verified are checked (one
//     fstat and a re-read of the first 4 KiB, once per read that crosses it,
//     never per line) before they are published: a file truncated and
//     written again past the read position is never read on from the old
//     position. A file of which nothing was read is checked again when its
//     epoch starts (the barrier).
//   - The generation scan while running never runs for the open file
//     truncated or rewritten in place (its copy is read by readCopy, or held
//     nothing unread), and skips a plain file whose first bytes are those of
//     a file the source holds or saw, over the whole fingerprint (4 KiB) or
//     the whole file: a copy, not a later generation. A shorter match is not
//     enough (rotated files may share a header): reading twice is a
//     duplicate, skipping a generation would be a gap.
//   - A loss counted for a file of which nothing was read (queued) names the
//     epoch the file is then read under, never 0.
//   - A path that names another file at every try of the open at start, or
//     flips between a regular file and something else, is retried at every
//     look (FAILED while it is no regular file), never a reason to stop. A
//     regular file that cannot be opened (EACCES) is FAILED with the open
//     error as detail, logged once, and retried likewise.
//
// # Many files per feed (globs, DESIGN §10)
//
// A feed whose path holds '*', '?' or '[' is read by a Glob (glob.go), not
// a Source. Design:
//
//   - Matching (match.go): the pattern's '/'-separated segments are
//     filepath.Match patterns; a segment "**" matches any number of
//     directories, zero included (doublestar semantics, a small matcher of
//     our own rather than a dependency). exclude globs are matched against
//     the whole path. Symlinks are followed to regular files; symlinked
//     directories are not descended (no loops). Anything under the daemon's
//     own outputs (file sinks, dataDir) is never matched, under any name:
//     by path; by the outputs' identities (stat'ed once per walk, after the
//     listing, with Config.OutputFiles: the daemon's stdout when a stdout
//     sink writes it), which catches symlinks and hard links to them at a
//     map lookup per file; and for a matched symlink by its resolved path
//     (under dataDir's), resolved once per link and file reached. A
//     matching symlink to nothing is skipped like a non-regular file.
//
//   - Discovery: a walk from the pattern's longest literal directory,
//     descending only directories that can still lead to a match, at
//     start, on fsnotify events (one watcher for the feed, every such
//     directory watched as soon as the walk sees it, so directories created
//     later are included), and every scanIntervalMillis. An event naming a
//     file of an open stream only wakes that stream; one naming a closed
//     stream's file stats that file alone; anything else rescans.
//
//   - Streams: each matched file is one stream, run by a Source of its own
//     (the single-file machinery: reader, splitter, identity checks,
//     commit, forget) in Pinned mode: it follows the file it opened, never
//     the path — another file at the path is the path missing for it (read
//     to its end, then closed rotateWaitMillis after its last growth), and
//     a stream of its own for the Glob. A stream's pointer is
//     dataDir/feeds/<feed>/<epoch>.ptr, named by the epoch it was created
//     with (chosen first, pointer.Options.Epoch). Its file key and
//     fingerprint identify the file. A new pointer costs fsyncs (its
//     directory, both slots, the epochs file): it is opened on the
//     stream's goroutine, never the manager's, so streams share them.
//
//   - Identity: the file key confirmed by the pointer's fingerprint; the
//     same key with other first bytes is a new stream; a key whose file was
//     seen deleted (or out of the glob) is retired: a file that later shows
//     up with it is new whatever its bytes. Unless the stream's source holds
//     a descriptor on the key, a file born after the glob first saw the
//     stream's (the walk's statx: birth time and key of one inode) is a new
//     stream whatever its size, mtime and first bytes. Birth times are not
//     used on overlayfs (a copy-up moves the birth time, not the key). A rename within the glob keeps
//     the stream (Delivery.Path stays the first path): a queued stream
//     whose file left its path is started only after a scan followed it
//     or found it gone (awaitScan; its source would look for it only beside
//     the old path); the commit a closed stream owes waits for that scan
//     too (it binds the file at its path, and only while its first bytes
//     are those its source read: owed.head). A source that finds its file
//     neither at its path nor beside it counts nothing unless the glob
//     found it gone (PinGone): it reports NotFound and the stream waits for
//     a scan again. Its own file at its path while its pointer names
//     another file (the copy its last source read, readCopy's Bind) not
//     beside the path: that file's unread tail is counted lost
//     (resumeRotated), never dropped by the Replaced reset. A file renamed within the glob keeps the per-path
//     barrier at the path it left (scan's vacated) until that stream has
//     nothing left to wait for. A key is retired once its stream closed
//     (an open file's inode cannot be reused). A stream reads only the file
//     of its key (Config.PinKey): another file at its path is a stream of
//     its own. A file that leaves the glob before any of it was read (no
//     pointer names it) is looked for beside its path, and beside a
//     symlinked path's target, by key — not a file born after the glob
//     first saw it (findBeside) — and read there, or counted lost from
//     where its stream would have read on (leftUnread, unreadFrom); a
//     closed file renamed out beside its path is opened again there
//     (readBeside: its writer may still append), read to its end and
//     closed rotateWaitMillis after its last growth (its key then
//     retired). A caught-up file out of the glob gives its slot to a
//     waiting file sooner only where a new turn finds it (beside its
//     path); closed so, it is watched (lookWatched, about once a second):
//     grown, queued to read on; quiet and committed, let go; gone, let go —
//     counted when fsnotify showed a write since it closed, or when
//     nothing could show one. At the start, a previous run's pointer whose file no
//     matched path holds is looked for beside the path its stream was
//     first matched under by key and first bytes (besideAtStart) and read
//     there the same way before anything is counted; a generation beside
//     that path born between its file and the file the path's pointer
//     names, that no pointer or epochs line names, is read from its start
//     as a stream of its own (readGaps), or counted once compressed
//     (countGzGap: a glob reads no .gz from its start). At Close, an owed
//     commit's file is followed through the glob or beside its path
//     (finalScan), and a file found out of the glob that no pointer names
//     and nobody read is counted.
//
//     Without pointers (EARLIEST, LATEST, ONCE_EARLIEST) the glob keeps
//     each stream's Resume point (where its last source stopped, the first
//     bytes it read, what it had read): a stream opened again reads on from
//     it while the first bytes are the same; its losses are counted from it;
//     a held copy (copytruncate) of a closed original reads on from it
//     (handOff); LATEST's first turn takes the end at the size the glob
//     found at its start (EndAt), unless the first bytes changed since
//     (EndHead); ONCE_EARLIEST reads a file to its size at start. A
//     waiting file that changed has its first bytes compared with its
//     Resume point's (seen): rewritten in place, the bytes the glob saw
//     past where its stream stopped are counted lost there, or by the
//     stream's open (Config.ResumeUnread) when the rewrite came later.
//
//     Copies: a file is held as a possible copy only when it matches a
//     tracked file's whole fingerprint (a few first bytes, a shared header
//     line, are no proof). A stream finding its file truncated takes a
//     copy that holds nothing it had not consumed as its own
//     (findShortCopy, at least as long as the fingerprint) and records it
//     (Source.CopyKey: key and time); the glob does not read a file a
//     stream took (born before it was taken: tookIt), also when a scan
//     meets it only later (tookForCopy). A held file whose original's
//     stream is open is a copy only if that stream took it. A file taken
//     for a copy that grows or whose first bytes change is read from its
//     start (isCopy, markCopy). A never-read file that is cut counts its
//     seen bytes lost unless a recent file beside it is large enough to
//     be its copy (copyNearby).
//
//     At a start, a previous run's pointer is taken by key + fingerprint
//     alone; one no matched file took is given to the file new at this
//     start at its stream's first path (adoptByPath; not one whose bytes a
//     file new at this start holds, a copy in the glob), whose source looks
//     for the pointer's file beside the path as §4's restart does (by key;
//     a copy by first bytes: a copytruncate while stopped, a stop while the
//     stream read its copy, a rename out while stopped) and reads its tail
//     first, or counts it. A record at offset 0 that names no file (bound
//     while its file was empty, nothing committed) takes its key and first
//     bytes from the epochs line; that file found beside the path is read
//     from its start under the pointer's epoch, one born after the pointer
//     file was last written being another (inode reuse); not found, it is
//     counted and the pointer moves to a new epoch (GoneEpoch: counted once)
//     before the file at the path is read, no generation beside read for it.
//     Until a genOwn stream's pointer names its own file, a look tells that
//     file by birth time, not by the first bytes of the file the pointer
//     names (the gone one or a later generation). Its own file leaving the
//     glob before its source reached it (not found beside the path) is
//     counted whole, once (ownLost), and the stream still reads the
//     pointer's file beside the path, or counts it (leftUnread); found
//     beside the path, the stream keeps its path (the generations are
//     named after it) and its next source opens its own file where it is
//     (ownAt), after them. Its source never reads, as a later generation,
//     a file the glob tracks as another stream (otherKeys). A stop counts
//     an own file still unread beside the path unless the next start
//     reads it as a later generation (laterGeneration); a kill -9 records
//     nothing of it (parked: open_rev21c).
//
//   - Publishing (mux.go): every stream publishes through the feed's one
//     Publisher under one mutex; the mux remembers each published batch's
//     stream, epoch, end position and last sequence, and hands the
//     acknowledgement to that stream once every holding queue finished the
//     whole batch, so each stream commits only its own positions (the
//     commit rule per stream; never ahead, at most one batch behind).
//     Wake-ups of the feed reach the streams they concern: one whose
//     batch was acknowledged, one whose last publish was refused.
//
//   - Order: a new file at a path is not opened before the stream that was
//     at that path is read to its end with every line acknowledged (the
//     epoch barrier per path); files at other paths interleave. At a
//     start, the streams first matched under one path (their pointers
//     name it: files rotated away from it) are chained the same way, the
//     file at the path last, the others oldest first (restartOrder).
//
//   - Bounds: at most (maxOpenFiles - reserve)/2 streams are open (one
//     input and one pointer descriptor each; without a pointer, one), the
//     reserve (maxOpenFiles/16, at least 1) left for short looks: the
//     manager's fingerprint checks, a stream's search for a copy.
//     (GlobConfig.MaxOpenFiles: the daemon gives the config's maxOpenFiles
//     less what it keeps for the process's own descriptors.)
//     Streams wanting a slot queue FIFO; when one waits, open streams that
//     are caught up, or have had their slot for a second, give it up (a
//     stream with bytes unread queues again), so one file cannot starve
//     the rest and memory grows with open files, not tracked ones. A
//     caught-up stream unchanged for closeInactiveMillis closes; a change
//     (event or rescan) reopens it with its identity checked again. A
//     stream whose file left the glob (gone) closes only rotateWaitMillis
//     after its last read, polling at Poll (events name its file by a path
//     the glob does not track); one closed by the glob (not at a stop) as
//     its file was renamed out beside its path is started again there
//     (readBeside), as when a scan sees the rename after the close. A
//     closing stream waits at most a minute (stopDrainBound) for its
//     lines' acknowledgements; if some are still missing, or its last
//     commit failed, it closes owing the commit (owed): its streamPub stays
//     in the mux's FIFO, the housekeeping commits the acknowledged position
//     into the pointer (opened for a moment, a reserve descriptor) once
//     every line is acknowledged, and until then CommitOK is false and the
//     stream is not forgotten. Reopened before that, the new source reads
//     from the pointer (unacknowledged lines again: duplicates, no gap). The
//     pointer I/O that waits for the disk (a new pointer's fsyncs, a
//     stream's open and adoption, each commit's msync) shares 32 slots
//     across the streams (Config.IOSlots): each blocked call holds an OS
//     thread, and a Go process keeps the threads it made. A stream's read
//     buffer is lazy (4 KiB to 64 KiB, sized to what waits) and given back
//     while it waits; a stream whose pointer is empty never looks for
//     generations beside its file, nor catalogues them (Pinned).
//
//   - Idle cost: the rescan is one fstatat per matched file (relative to
//     its open directory) and one listing per directory; housekeeping
//     looks at the running streams and the held copies only, and for
//     pointers to forget every forgetAfterMillis/4 (at most a minute).
//
//   - Fairness inside the slots is per batch: each stream publishes at most
//     one batch per call and then competes again for the mutex.
//
//   - Forgetting: a stream whose file is gone, closed after reading it to
//     its end with nothing unacknowledged, has its pointer deleted
//     forgetAfterMillis later (a deleted file's pointer was already emptied
//     by its Source, see Forgetting above; a file renamed out of the glob,
//     or closed before it was deleted, is emptied by the glob:
//     forgetClosed). At start, a pointer that still names a file (key,
//     fingerprint) the first scan did not find, nor a copy of it, and that
//     no file at its first path took (adoptByPath), counts
//     one lost tail and is emptied (countGone): the file went away while
//     the daemon was stopped, perhaps with lines appended.
//
//   - Copies: once running, a new file whose first bytes match a tracked
//     file's fingerprint is held back for rotateWaitMillis; if that file is
//     truncated or gone by then, the new one is its copy (copytruncate):
//     never read as a stream of its own (the original's stream reads its
//     unread tail from it, §4 readCopy, when its name matches rotatedNames);
//     otherwise it is a new stream from its start. A new empty file waits
//     for its first bytes before this decision. A rename into place over
//     an open stream's file (cp A A.tmp; echo >> A.tmp; mv A.tmp A: the
//     open file deleted, the path naming its bytes plus appended ones) is
//     case D: the stream's source switches to the new file at its epoch
//     and position (adoptRenamedOver, switchTo) if no stream was ever
//     queued for that key (Config.Adoptable), and the glob gives the
//     stream the new key (Source.Adopted, takeOver), dropping the new
//     file's stream. A closed stream's file replaced so (its key gone
//     from the glob and from beside its path, the new file at its path
//     holding its pointer's first bytes and offset) is followed the same
//     way by the scan (replacedClosed): the stream takes the new key and
//     its next source keeps the pointer (KeptNewKey).
//
// Not done yet (decisions and gaps): ONCE_EARLIEST reads a
// file to its size when its stream opens, not when it was matched; a
// stream's rotated generations are not searched
// for beyond the Source's own lookup at open; fairness is per batch under
// a mutex, not a strict round-robin.
package file
