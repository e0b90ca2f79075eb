import { defineConfig } from "vite";
import preact from "@preact/preset-vite";

// One bundle (no code splitting) so the HTML report can inline it; relative asset paths so
// the dashboard and file:// both work. Output goes to the Python package's data folder.
export default defineConfig({
  plugins: [preact()],
  base: "./",
  build: {
    outDir: "../src/stepscope/report/static",
    emptyOutDir: true,
    assetsInlineLimit: 0,
    cssCodeSplit: false,
    modulePreload: false,
    chunkSizeWarningLimit: 1000,
    rollupOptions: { output: { inlineDynamicImports: true, entryFileNames: "assets/app.js",
      assetFileNames: "assets/app[extname]" } },
  },
});
