//! A fake Android device for tests and benches: it listens on a loopback TCP port and speaks the
//! device side of the ADB transport, so the real `adb` server can `adb connect 127.0.0.1:PORT`.

mod apk;
mod connection;
mod phone;
mod protocol;
mod screen;
mod server;
mod services;
mod sync;

use std::io;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};

pub use phone::{LogLine, Package};
pub use screen::{BUTTON_BOUNDS, FixtureState, SCREEN_HEIGHT, SCREEN_WIDTH};
pub use server::PrivateAdbServer;

/// A running fake device. Dropping it closes the listener and every connection, which the adb
/// server sees as the device going away.
pub struct Fixture {
    /// The loopback port to `adb connect 127.0.0.1:PORT` to.
    pub port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

pub(crate) struct Shared {
    state: Mutex<FixtureState>,
    /// Print each service the host opens on stdout (the binary does, for tests in other
    /// languages to follow what the device received).
    pub(crate) log_services: bool,
    stopping: AtomicBool,
    /// Open connections by id, so `Drop` can shut them down.
    connections: Mutex<Vec<(u64, TcpStream)>>,
    next_connection: AtomicU64,
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, FixtureState> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn connections(&self) -> MutexGuard<'_, Vec<(u64, TcpStream)>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Fixture {
    /// Binds a free loopback port and serves each connection on its own thread.
    pub fn start() -> io::Result<Fixture> {
        Fixture::start_on(0, false)
    }

    /// Binds `127.0.0.1:port` (0 picks a free one), so a restarted device can come back at the
    /// same address. Each start is a new boot: it gets a fresh boot id. With `log_services`,
    /// every service the host opens is printed on stdout as `service: NAME`.
    pub fn start_on(port: u16, log_services: bool) -> io::Result<Fixture> {
        let listener = TcpListener::bind(("127.0.0.1", port))?;
        let port = listener.local_addr()?.port();
        let shared = Arc::new(Shared {
            state: Mutex::new(FixtureState::with_boot_id(screen::new_boot_id())),
            log_services,
            stopping: AtomicBool::new(false),
            connections: Mutex::new(Vec::new()),
            next_connection: AtomicU64::new(1),
        });
        let acceptor = thread::Builder::new()
            .name(format!("adb-fixture-{port}"))
            .spawn({
                let shared = Arc::clone(&shared);
                move || accept(&listener, &shared)
            })?;
        Ok(Fixture {
            port,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The serial the adb server lists this device under once connected.
    pub fn serial(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A copy of everything the device has received so far.
    pub fn state(&self) -> FixtureState {
        self.shared.state().clone()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept; if the connect fails the listener is already gone.
        if let Ok(waker) = TcpStream::connect(("127.0.0.1", self.port)) {
            drop(waker);
        }
        if let Some(acceptor) = self.acceptor.take()
            && acceptor.join().is_err()
        {
            eprintln!("lomi-adb-fixture: the accept thread panicked");
        }
        for (_, stream) in self.shared.connections().drain(..) {
            // The peer may already have closed it; either way it is closed now.
            if let Err(error) = stream.shutdown(Shutdown::Both) {
                eprintln!("lomi-adb-fixture: closing a connection: {error}");
            }
        }
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(error) => {
                eprintln!("lomi-adb-fixture: accept failed: {error}");
                continue;
            }
        };
        // Small packets (OKAY, short WRTEs) go out at once rather than waiting for an ACK.
        if let Err(error) = stream.set_nodelay(true) {
            eprintln!("lomi-adb-fixture: TCP_NODELAY: {error}");
        }
        let id = shared.next_connection.fetch_add(1, Ordering::SeqCst);
        match stream.try_clone() {
            Ok(handle) => shared.connections().push((id, handle)),
            Err(error) => {
                eprintln!("lomi-adb-fixture: cloning a connection: {error}");
                continue;
            }
        }
        let spawned = thread::Builder::new()
            .name(format!("adb-fixture-conn-{id}"))
            .spawn({
                let shared = Arc::clone(shared);
                move || {
                    connection::serve(stream, &shared);
                    shared.connections().retain(|(other, _)| *other != id);
                }
            });
        if let Err(error) = spawned {
            eprintln!("lomi-adb-fixture: starting a connection thread: {error}");
        }
    }
}

pub(crate) fn log_service(service: &str) {
    use std::io::Write;
    let mut stdout = io::stdout().lock();
    // A closed stdout only loses the log; the device keeps serving.
    let shown = service.replace('\\', "\\\\").replace('\n', "\\n");
    if writeln!(stdout, "service: {shown}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        eprintln!("lomi-adb-fixture: could not log a service on stdout");
    }
}
