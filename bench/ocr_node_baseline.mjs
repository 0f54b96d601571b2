// Baseline for bench/ppocr_compare.sh: the same PP-OCRv4 models on onnxruntime-node through
// @gutenye/ocr-node, over a list of images, one at a time. Writes one JSON Lines object per image in
// Lector's result schema (image, lines with box, text, timing_ms.total) to stdout.
// usage: node ocr_node_baseline.mjs ROOT IMAGE...   (image names are written relative to ROOT)
import path from 'node:path'
import Ocr from '@gutenye/ocr-node'

const [root, ...images] = process.argv.slice(2)
const ocr = await Ocr.create()
// One warm-up run, not reported, as lector-cli bench does.
if (images.length) await ocr.detect(images[0])
for (const image of images) {
  const t0 = performance.now()
  let lines = []
  let error = null
  try {
    const found = await ocr.detect(image)
    lines = found.map((l) => {
      const xs = l.box.map((p) => p[0])
      const ys = l.box.map((p) => p[1])
      return {
        text: l.text,
        confidence: l.mean,
        box: [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)].map(Math.round),
      }
    })
  } catch (e) {
    error = { code: 'failed', message: String(e) }
  }
  const total = performance.now() - t0
  const rec = {
    image: path.relative(root, image),
    lines,
    text: lines.map((l) => l.text).join('\n'),
    timing_ms: { total },
    error,
  }
  process.stdout.write(JSON.stringify(rec) + '\n')
  process.stderr.write(`${rec.image} ${total.toFixed(0)} ms\n`)
}
