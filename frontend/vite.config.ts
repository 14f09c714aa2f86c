// Builds the window's page into dist/ (what tauri.conf.json's frontendDist embeds) and runs
// the Vitest unit tests in jsdom. Preact's preset compiles the TSX components.
import preact from "@preact/preset-vite";
import { defineConfig } from "vitest/config";

export default defineConfig({
  clearScreen: false,
  plugins: [preact()],
  build: { outDir: "dist", emptyOutDir: true, target: "es2021", chunkSizeWarningLimit: 1024 },
  test: { environment: "jsdom", include: ["src/**/*.test.ts", "src/**/*.test.tsx"] },
});
