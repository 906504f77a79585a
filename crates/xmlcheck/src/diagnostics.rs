//! libxml2 set up once, its diagnostics captured instead of printed, and its
//! access to files confined to loading DTDs and schemas.
//!
//! libxml2 reports errors through a per-thread "structured error" handler (when
//! none is set, it prints to stderr). [`init`] installs a handler that discards
//! everything as the default for every thread; around each operation a
//! [`Capture`] installs, on the calling thread, a handler that collects the
//! messages (at most [`MAX_MESSAGES`], each at most [`MAX_MESSAGE_LEN`] bytes:
//! a hostile document can raise thousands of errors) and puts the discarding one
//! back when dropped.
//!
//! External resources go through one loader ([`entity_loader`]): it refuses
//! everything, except on a thread inside [`FilesAllowed`] (loading a DTD or a
//! schema from the rule set), where it is libxml2's own loader that refuses
//! `http://` and `ftp://`. A request document can therefore never make libxml2
//! read a file or open a connection, whatever its DOCTYPE says.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::ptr;
use std::sync::{Mutex, MutexGuard, Once, PoisonError};

use crate::ffi;

/// Most messages one operation keeps (the rest are counted).
pub(crate) const MAX_MESSAGES: usize = 16;
/// Longest message kept, in bytes (longer ones are cut on a character boundary).
pub(crate) const MAX_MESSAGE_LEN: usize = 300;

static INIT: Once = Once::new();

/// Serialises loading DTDs and schemas: libxml2's schema compiler initialises
/// shared type tables lazily, without locking.
static LOAD: Mutex<()> = Mutex::new(());

thread_local! {
    /// Whether the entity loader may read local files on this thread.
    static FILES_ALLOWED: Cell<bool> = const { Cell::new(false) };
}

/// Initialises libxml2 once per process: `xmlInitParser` (required before use
/// from several threads), the built-in schema types, the entity loader and the
/// discarding error handler as every thread's default.
pub(crate) fn init() {
    INIT.call_once(|| {
        // SAFETY: called once per process (`Once`) before any other libxml2 call
        // of this crate, as libxml2 requires for multithreaded use.
        unsafe { ffi::xmlInitParser() };
        // SAFETY: libxml2 is initialised; this fills its built-in type tables
        // once, here, so that no schema load does it lazily from two threads.
        unsafe { ffi::xmlSchemaInitTypes() };
        // SAFETY: `entity_loader` is a `'static` function with the C signature
        // libxml2 expects; the loader is a process-wide setting.
        unsafe { ffi::xmlSetExternalEntityLoader(Some(entity_loader)) };
        // SAFETY: `discard` is a `'static` function with the handler signature
        // and ignores its (null) context.
        unsafe { ffi::xmlThrDefSetStructuredErrorFunc(ptr::null_mut(), Some(discard)) };
        // SAFETY: as above, for the calling thread (libxml2's "main" thread).
        unsafe { ffi::xmlSetStructuredErrorFunc(ptr::null_mut(), Some(discard)) };
    });
}

/// The structured error handler that drops every message.
unsafe extern "C" fn discard(_context: *mut c_void, _error: *mut ffi::XmlError) {}

/// libxml2's external entity loader for this process (see the module docs).
unsafe extern "C" fn entity_loader(
    url: *const c_char,
    id: *const c_char,
    context: *mut ffi::xmlParserCtxt,
) -> *mut ffi::xmlParserInput {
    // `try_with`: false during thread teardown rather than a panic across FFI.
    if !FILES_ALLOWED.try_with(Cell::get).unwrap_or(false) {
        return ptr::null_mut();
    }
    // SAFETY: the arguments are those libxml2 passed to this loader, forwarded
    // unchanged to its own loader with the same contract.
    unsafe { ffi::xmlNoNetExternalEntityLoader(url, id, context) }
}

/// While alive: this thread may load local files (DTDs and schemas of the rule
/// set, and what they include), and no other thread loads one.
pub(crate) struct FilesAllowed {
    _load: MutexGuard<'static, ()>,
}

impl FilesAllowed {
    pub(crate) fn enter() -> FilesAllowed {
        init();
        let load = LOAD.lock().unwrap_or_else(PoisonError::into_inner);
        FILES_ALLOWED.with(|f| f.set(true));
        FilesAllowed { _load: load }
    }
}

impl Drop for FilesAllowed {
    fn drop(&mut self) {
        let _ = FILES_ALLOWED.try_with(|f| f.set(false));
    }
}

/// Where a [`Capture`] collects messages.
#[derive(Default)]
struct Sink {
    messages: Vec<String>,
    /// Messages beyond [`MAX_MESSAGES`].
    more: usize,
}

/// Collects libxml2's messages on this thread while alive (see the module docs).
///
/// Handlers registered on libxml2 objects with [`Capture::context`] must not
/// outlive the capture: free those objects before it is dropped or finished.
pub(crate) struct Capture {
    /// From `Box::into_raw`; freed in `Drop`, after the handler is unregistered.
    sink: *mut Sink,
}

impl Capture {
    /// Starts collecting on the calling thread.
    pub(crate) fn start() -> Capture {
        init();
        let sink = Box::into_raw(Box::new(Sink::default()));
        // SAFETY: `collect` has the handler signature; `sink` is a valid, uniquely
        // owned allocation that stays alive until `Drop` has unregistered it.
        unsafe { ffi::xmlSetStructuredErrorFunc(sink.cast(), Some(collect)) };
        Capture { sink }
    }

    /// The context to pass with [`Capture::handler`] to libxml2 functions that
    /// take their own structured error handler.
    pub(crate) fn context(&self) -> *mut c_void {
        self.sink.cast()
    }

    /// The collecting handler, for [`Capture::context`].
    pub(crate) fn handler() -> ffi::xmlStructuredErrorFunc {
        Some(collect)
    }

    /// Stops collecting and returns the messages (with a last line counting
    /// those left out).
    pub(crate) fn finish(self) -> Vec<String> {
        unregister();
        // SAFETY: `sink` is alive (freed only in `Drop`), and libxml2 no longer
        // holds it: the thread handler is unregistered and, per the type's
        // contract, the objects given `context()` are freed.
        let sink = unsafe { &mut *self.sink };
        let mut messages = std::mem::take(&mut sink.messages);
        if sink.more > 0 {
            messages.push(format!("... and {} more", sink.more));
        }
        messages
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        unregister();
        // SAFETY: `sink` came from `Box::into_raw` in `start`, is freed only here,
        // and libxml2 no longer refers to it (see `finish`).
        drop(unsafe { Box::from_raw(self.sink) });
    }
}

/// Puts the discarding handler back on this thread.
fn unregister() {
    // SAFETY: `discard` has the handler signature and ignores its context.
    unsafe { ffi::xmlSetStructuredErrorFunc(ptr::null_mut(), Some(discard)) };
}

/// The collecting structured error handler (context: a [`Sink`]).
unsafe extern "C" fn collect(context: *mut c_void, error: *mut ffi::XmlError) {
    if context.is_null() || error.is_null() {
        return;
    }
    // SAFETY: libxml2 passes back the context registered with this handler,
    // which is always a live `Sink` of a `Capture` on this thread (handlers are
    // unregistered before the sink is freed), and nothing else borrows it while
    // libxml2 runs.
    let sink = unsafe { &mut *context.cast::<Sink>() };
    // SAFETY: `error` points to libxml2's error record for this call.
    let error = unsafe { &*error };
    if error.level == ffi::XML_ERR_WARNING {
        return;
    }
    if sink.messages.len() >= MAX_MESSAGES {
        sink.more += 1;
        return;
    }
    // SAFETY: non-null `message` and `file` are NUL-terminated strings owned
    // by libxml2 for the duration of the call.
    let text = unsafe { c_text(error.message) }.unwrap_or_else(|| "unknown error".into());
    // SAFETY: as above.
    let file = unsafe { c_text(error.file) };
    let mut message = match (file, error.line) {
        (Some(f), l) if l > 0 => format!("{f}:{l}: {}", text.trim()),
        (Some(f), _) => format!("{f}: {}", text.trim()),
        (None, l) if l > 0 => format!("line {l}: {}", text.trim()),
        (None, _) => text.trim().to_string(),
    };
    if message.len() > MAX_MESSAGE_LEN {
        let mut cut = MAX_MESSAGE_LEN;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push_str("...");
    }
    sink.messages.push(message);
}

/// A C string as text (lossy), `None` for a null pointer.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string valid for the call.
unsafe fn c_text(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated per this function's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}
