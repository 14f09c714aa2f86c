//! The broker's change feed: one counter per area of what the person's window shows, moved by
//! every change there, so a window reads again only the areas that changed instead of polling.

use crate::Broker;

/// An area of the broker's state that a window shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// `domain.json`: workspaces and their layouts, pairings and grants, the policy, settings.
    Domain,
    /// Panels' runtimes (a new generation) and what they show (an Android capture).
    Panels,
    /// Operations: reserved, moved to another state, waiting for or given a decision, or
    /// refused because the store could not write; and the store's status that follows them.
    Operations,
    /// An agent's call: its pairing's last activity.
    Activity,
    /// Chat: a conversation created or renamed, a draft changed, a message sent, a reply's
    /// text growing or settling.
    Chat,
}

/// How often each area has changed since this broker started. Compare two values to learn
/// which areas to read again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub domain: u64,
    pub panels: u64,
    pub operations: u64,
    pub activity: u64,
    pub chat: u64,
}

impl Changes {
    fn counter(&mut self, area: Area) -> &mut u64 {
        match area {
            Area::Domain => &mut self.domain,
            Area::Panels => &mut self.panels,
            Area::Operations => &mut self.operations,
            Area::Activity => &mut self.activity,
            Area::Chat => &mut self.chat,
        }
    }
}

impl Broker {
    /// The change feed: the receiver wakes after any area changed.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<Changes> {
        self.inner.changes.subscribe()
    }

    /// Records that `area` changed (runtimes call this for what only they know, such as a new
    /// Android capture).
    pub fn note_change(&self, area: Area) {
        self.inner.changes.send_modify(|changes| {
            let counter = changes.counter(area);
            *counter = counter.wrapping_add(1);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_area_moves_only_its_own_counter() {
        let mut changes = Changes::default();
        *changes.counter(Area::Panels) += 1;
        *changes.counter(Area::Operations) += 2;
        assert_eq!(
            changes,
            Changes {
                domain: 0,
                panels: 1,
                operations: 2,
                activity: 0,
                chat: 0
            }
        );
    }
}
