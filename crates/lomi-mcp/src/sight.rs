//! What the broker reads through to show the person an operation's effect before they decide
//! (`lomi_broker::Sight`): project files and Git's index through `lomi-files` (confined as the
//! file tools are), a phone's model through the adb server.

use std::path::PathBuf;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use lomi_android::AdbServer;
use lomi_broker::{OpenDocument, Peek, Sight, Staged, off_thread};
use lomi_files::documents::Documents;
use lomi_protocol::DocumentId;

/// The runtimes' reads for previews.
pub struct HostSight {
    pub adb: AdbServer,
    /// The editor's open documents, for what a save would write.
    pub documents: Documents,
}

impl Sight for HostSight {
    fn peek(
        &self,
        root: PathBuf,
        rel: String,
        max: usize,
    ) -> BoxFuture<'static, Result<Option<Peek>, String>> {
        lomi_files::preview::peek(root, rel, max).boxed()
    }

    fn staged(&self, root: PathBuf, max: usize) -> BoxFuture<'static, Result<Staged, String>> {
        async move { lomi_files::preview::staged(&root, max).await }.boxed()
    }

    fn device_model(&self, serial: String) -> BoxFuture<'static, Option<String>> {
        let adb = self.adb;
        // From the adb server's own listing: nothing runs on the device before the person
        // decides. A server that does not answer leaves the model unknown; the serial is shown.
        async move {
            off_thread(move || adb.listed_model(&serial))
                .await
                .ok()
                .flatten()
        }
        .boxed()
    }

    fn document(&self, id: DocumentId) -> Option<OpenDocument> {
        lomi_files::preview::document(&self.documents, &id)
    }
}
