//! A tab's device emulation (viewport, scale, mobile and touch, User-Agent, color scheme), and
//! the device the page reports.

use serde_json::{Value, json};

use super::Tab;
use crate::BrowserError;

/// A browser's device emulation, applied to every tab (and to tabs opened later).
#[derive(Clone, Debug, PartialEq)]
pub struct Emulation {
    pub width: u32,
    pub height: u32,
    pub scale: f64,
    pub mobile: bool,
    pub user_agent: Option<String>,
    pub color_scheme: Option<String>,
}

impl Tab {
    /// Applies an emulation to this tab: viewport and scale, mobile (with touch), User-Agent
    /// and `prefers-color-scheme`.
    pub(crate) async fn emulate(&self, emulation: &Emulation) -> Result<(), BrowserError> {
        self.raw(
            "Emulation.setDeviceMetricsOverride",
            json!({
                "width": emulation.width, "height": emulation.height,
                "deviceScaleFactor": emulation.scale, "mobile": emulation.mobile,
            }),
        )
        .await?;
        self.raw(
            "Emulation.setTouchEmulationEnabled",
            json!({ "enabled": emulation.mobile }),
        )
        .await?;
        // An empty User-Agent or feature value lifts the override.
        self.raw(
            "Emulation.setUserAgentOverride",
            json!({ "userAgent": emulation.user_agent.clone().unwrap_or_default() }),
        )
        .await?;
        self.raw(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{
                "name": "prefers-color-scheme",
                "value": emulation.color_scheme.clone().unwrap_or_default(),
            }] }),
        )
        .await?;
        Ok(())
    }

    /// What the page reports of its device: innerWidth, innerHeight, devicePixelRatio,
    /// prefersDark, userAgent.
    pub async fn metrics(&self) -> Result<Value, BrowserError> {
        let context = self.main_world().await?;
        self.helper(context, "metrics()").await
    }
}
