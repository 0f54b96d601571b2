<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
  <context>
    <name>ExportController</name>
    <message>
      <source>JSON (*.json)</source>
      <translation>JSON (*.json)</translation>
    </message>
    <message>
      <source>CSV, one row per line (*.csv)</source>
      <translation>CSV，每行文字一行 (*.csv)</translation>
    </message>
    <message>
      <source>CSV, one row per image with its fields (*.csv)</source>
      <translation>CSV，每张图片一行及其字段 (*.csv)</translation>
    </message>
    <message>
      <source>Text (*.txt)</source>
      <translation>文本 (*.txt)</translation>
    </message>
    <message>
      <source>Markdown (*.md)</source>
      <translation>Markdown (*.md)</translation>
    </message>
  </context>
  <context>
    <name>ModelChoice</name>
    <message>
      <source>PP-OCRv4 (CPU)</source>
      <translation>PP-OCRv4（CPU）</translation>
    </message>
    <message>
      <source>PP-OCRv4 (CUDA)</source>
      <translation>PP-OCRv4（CUDA）</translation>
    </message>
    <message>
      <source>HunyuanOCR 1.0</source>
      <translation>HunyuanOCR 1.0</translation>
    </message>
    <message>
      <source>no model</source>
      <translation>未加载模型</translation>
    </message>
  </context>
  <context>
    <name>ModelFolder</name>
    <message>
      <source>Missing file: %1</source>
      <translation>缺少文件：%1</translation>
    </message>
    <message>
      <source>No folder chosen.</source>
      <translation>未选择文件夹。</translation>
    </message>
    <message>
      <source>Folder does not exist: %1</source>
      <translation>文件夹不存在：%1</translation>
    </message>
    <message>
      <source>Unreadable weight index: %1</source>
      <translation>无法读取权重索引：%1</translation>
    </message>
    <message>
      <source>Missing file: %1 (or %2)</source>
      <translation>缺少文件：%1（或 %2）</translation>
    </message>
    <message>
      <source>HunyuanOCR model found.</source>
      <translation>已找到 HunyuanOCR 模型。</translation>
    </message>
  </context>
  <context>
    <name>OverlayItem</name>
    <message>
      <source>Confidence %1%</source>
      <translation>置信度 %1%</translation>
    </message>
  </context>
  <context>
    <name>QueueModel</name>
    <message>
      <source>Queued</source>
      <translation>排队中</translation>
    </message>
    <message>
      <source>Loading</source>
      <translation>读取中</translation>
    </message>
    <message>
      <source>Running</source>
      <translation>识别中</translation>
    </message>
    <message>
      <source>Done</source>
      <translation>完成</translation>
    </message>
    <message>
      <source>Failed</source>
      <translation>失败</translation>
    </message>
    <message>
      <source>Cancelled</source>
      <translation>已取消</translation>
    </message>
    <message>
      <source>%1 lines · %2 ms</source>
      <translation>%1 行 · %2 ms</translation>
    </message>
  </context>
  <context>
    <name>StatusLine</name>
    <message>
      <source>queue</source>
      <translation>排队</translation>
    </message>
    <message>
      <source>load</source>
      <translation>读取</translation>
    </message>
    <message>
      <source>preprocess</source>
      <translation>预处理</translation>
    </message>
    <message>
      <source>det</source>
      <translation>检测</translation>
    </message>
    <message>
      <source>cls</source>
      <translation>方向</translation>
    </message>
    <message>
      <source>rec</source>
      <translation>识别</translation>
    </message>
    <message>
      <source>vision</source>
      <translation>视觉</translation>
    </message>
    <message>
      <source>prefill</source>
      <translation>预填充</translation>
    </message>
    <message>
      <source>decode</source>
      <translation>解码</translation>
    </message>
    <message>
      <source>post</source>
      <translation>后处理</translation>
    </message>
    <message>
      <source>%1 ms</source>
      <translation>%1 ms</translation>
    </message>
    <message>
      <source>%1 s</source>
      <translation>%1 秒</translation>
    </message>
    <message>
      <source>  %1 tok/s</source>
      <translation>  %1 tok/s</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::BatchDialog</name>
    <message>
      <source>Batch OCR</source>
      <translation>批量识别</translation>
    </message>
    <message>
      <source>Folder</source>
      <translation>文件夹</translation>
    </message>
    <message>
      <source>Images in</source>
      <translation>图片位置</translation>
    </message>
    <message>
      <source>Browse…</source>
      <translation>浏览…</translation>
    </message>
    <message>
      <source>Include subfolders</source>
      <translation>包含子文件夹</translation>
    </message>
    <message>
      <source>File types</source>
      <translation>文件类型</translation>
    </message>
    <message>
      <source>Extensions separated by spaces</source>
      <translation>用空格分隔的扩展名</translation>
    </message>
    <message>
      <source>Save as</source>
      <translation>保存为</translation>
    </message>
    <message>
      <source>JSON Lines (one file)</source>
      <translation>JSON Lines（单个文件）</translation>
    </message>
    <message>
      <source>CSV (one file, one row per line of text)</source>
      <translation>CSV（单个文件，每行文字一行）</translation>
    </message>
    <message>
      <source>JSON (one file per image)</source>
      <translation>JSON（每张图片一个文件）</translation>
    </message>
    <message>
      <source>Text (one file per image)</source>
      <translation>文本（每张图片一个文件）</translation>
    </message>
    <message>
      <source>Output folder</source>
      <translation>输出文件夹</translation>
    </message>
    <message>
      <source>Mirror the source folder tree</source>
      <translation>保持源文件夹的目录结构</translation>
    </message>
    <message>
      <source>Progress</source>
      <translation>进度</translation>
    </message>
    <message>
      <source>Failed images</source>
      <translation>失败的图片</translation>
    </message>
    <message>
      <source>Open output folder</source>
      <translation>打开输出文件夹</translation>
    </message>
    <message>
      <source>Start</source>
      <translation>开始</translation>
    </message>
    <message>
      <source>Cancel batch</source>
      <translation>取消批量任务</translation>
    </message>
    <message>
      <source>Close</source>
      <translation>关闭</translation>
    </message>
    <message>
      <source>Not started.</source>
      <translation>尚未开始。</translation>
    </message>
    <message>
      <source>Preset: %1 · Model: %2</source>
      <translation>预设：%1 · 模型：%2</translation>
    </message>
    <message>
      <source>Folder with images</source>
      <translation>图片所在文件夹</translation>
    </message>
    <message>
      <source>This folder holds an unfinished batch of %1. Start continues it: images already saved are skipped.</source>
      <translation>此文件夹中有一个未完成的批量任务（%1）。点击“开始”将继续：已保存的图片会被跳过。</translation>
    </message>
    <message>
      <source>Choose a folder with images.</source>
      <translation>请选择包含图片的文件夹。</translation>
    </message>
    <message>
      <source>Looking for images…</source>
      <translation>正在查找图片…</translation>
    </message>
    <message>
      <source>Start again</source>
      <translation>重新开始</translation>
    </message>
    <message>
      <source>Resume</source>
      <translation>继续</translation>
    </message>
    <message>
      <source>Pause</source>
      <translation>暂停</translation>
    </message>
    <message>
      <source>%1 of %2 images</source>
      <translation>%1 / %2 张图片</translation>
    </message>
    <message>
      <source> · %1 already done</source>
      <translation> · %1 张已完成</translation>
    </message>
    <message>
      <source> · %1 failed</source>
      <translation> · %1 张失败</translation>
    </message>
    <message>
      <source> · %1 images/s</source>
      <translation> · 每秒 %1 张</translation>
    </message>
    <message>
      <source> · paused</source>
      <translation> · 已暂停</translation>
    </message>
    <message>
      <source> · ETA %1</source>
      <translation> · 剩余 %1</translation>
    </message>
    <message>
      <source>Stopped: %1</source>
      <translation>已停止：%1</translation>
    </message>
    <message>
      <source>Cancelled after %1 images. Start again to continue where it stopped.</source>
      <translation>处理 %1 张图片后已取消。再次开始将从中断处继续。</translation>
    </message>
    <message>
      <source>Finished: %1 images in %2 (%3 skipped, %4 failed).</source>
      <translation>完成：%1 张图片，用时 %2（跳过 %3 张，失败 %4 张）。</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::BatchJob</name>
    <message>
      <source>Cannot create the output folder %1</source>
      <translation>无法创建输出文件夹 %1</translation>
    </message>
    <message>
      <source>failed in an earlier run</source>
      <translation>在之前的运行中失败</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::DownloadDialog</name>
    <message>
      <source>Get HunyuanOCR</source>
      <translation>获取 HunyuanOCR</translation>
    </message>
    <message>
      <source>Downloads HunyuanOCR 1.0 (about 2 GB, from Hugging Face: tencent/HunyuanOCR, folder v1.0) into:
%1
An interrupted download continues where it stopped.</source>
      <translation>下载 HunyuanOCR 1.0（约 2 GB，来自 Hugging Face：tencent/HunyuanOCR 的 v1.0 文件夹）到：
%1
下载中断后可从中断处继续。</translation>
    </message>
    <message>
      <source>Download</source>
      <translation>下载</translation>
    </message>
    <message>
      <source>Close</source>
      <translation>关闭</translation>
    </message>
    <message>
      <source>File %1 of at least %2: %3</source>
      <translation>第 %1 个文件（至少 %2 个）：%3</translation>
    </message>
    <message>
      <source>%1 of %2</source>
      <translation>%1 / %2</translation>
    </message>
    <message>
      <source>Retry</source>
      <translation>重试</translation>
    </message>
    <message>
      <source>Done. HunyuanOCR is ready in %1.</source>
      <translation>完成。HunyuanOCR 已就绪：%1。</translation>
    </message>
    <message>
      <source>Stopped: %1</source>
      <translation>已停止：%1</translation>
    </message>
    <message>
      <source>Cancel</source>
      <translation>取消</translation>
    </message>
    <message>
      <source>Connecting…</source>
      <translation>正在连接…</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::EmptyState</name>
    <message>
      <source>Drop images or folders here</source>
      <translation>将图片或文件夹拖放到这里</translation>
    </message>
    <message>
      <source>or paste a screenshot with Ctrl+V. Lector reads the text, shows every line as a box on the image, and tells you how long it took.</source>
      <translation>或按 Ctrl+V 粘贴截图。Lector 识别其中的文字，在图片上用方框标出每一行，并显示耗时。</translation>
    </message>
    <message>
      <source>Open images…</source>
      <translation>打开图片…</translation>
    </message>
    <message>
      <source>Open folder…</source>
      <translation>打开文件夹…</translation>
    </message>
    <message>
      <source>Paste</source>
      <translation>粘贴</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::ExportController</name>
    <message>
      <source>Export results</source>
      <translation>导出结果</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::InputController</name>
    <message>
      <source>Pasted image %1</source>
      <translation>粘贴的图片 %1</translation>
    </message>
    <message>
      <source>No images found in %1</source>
      <translation>在 %1 中没有找到图片</translation>
    </message>
    <message>
      <source>Images (%1)</source>
      <translation>图片 (%1)</translation>
    </message>
    <message>
      <source>Open Images</source>
      <translation>打开图片</translation>
    </message>
    <message>
      <source>Open Folder</source>
      <translation>打开文件夹</translation>
    </message>
    <message>
      <source>The clipboard holds no image or image file.</source>
      <translation>剪贴板中没有图片或图片文件。</translation>
    </message>
    <message>
      <source>No recent files</source>
      <translation>没有最近的文件</translation>
    </message>
    <message>
      <source>Clear list</source>
      <translation>清空列表</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::MainActions</name>
    <message>
      <source>&amp;Open Images…</source>
      <translation>打开图片(&amp;O)…</translation>
    </message>
    <message>
      <source>Open</source>
      <translation>打开</translation>
    </message>
    <message>
      <source>Open &amp;Folder…</source>
      <translation>打开文件夹(&amp;F)…</translation>
    </message>
    <message>
      <source>Folder</source>
      <translation>文件夹</translation>
    </message>
    <message>
      <source>&amp;Paste Image</source>
      <translation>粘贴图片(&amp;P)</translation>
    </message>
    <message>
      <source>Paste</source>
      <translation>粘贴</translation>
    </message>
    <message>
      <source>&amp;Batch OCR…</source>
      <translation>批量识别(&amp;B)…</translation>
    </message>
    <message>
      <source>Batch</source>
      <translation>批量</translation>
    </message>
    <message>
      <source>&amp;Quit</source>
      <translation>退出(&amp;Q)</translation>
    </message>
    <message>
      <source>&amp;Recent Files</source>
      <translation>最近的文件(&amp;R)</translation>
    </message>
    <message>
      <source>&amp;Export Current Image</source>
      <translation>导出当前图片(&amp;E)</translation>
    </message>
    <message>
      <source>Export &amp;All Results</source>
      <translation>导出全部结果(&amp;A)</translation>
    </message>
    <message>
      <source>JSON…</source>
      <translation>JSON…</translation>
    </message>
    <message>
      <source>CSV (lines)…</source>
      <translation>CSV（按行）…</translation>
    </message>
    <message>
      <source>CSV (fields)…</source>
      <translation>CSV（按字段）…</translation>
    </message>
    <message>
      <source>Text…</source>
      <translation>文本…</translation>
    </message>
    <message>
      <source>Markdown…</source>
      <translation>Markdown…</translation>
    </message>
    <message>
      <source>&amp;Copy Text</source>
      <translation>复制文字(&amp;C)</translation>
    </message>
    <message>
      <source>Copy text</source>
      <translation>复制文字</translation>
    </message>
    <message>
      <source>Copy the recognised text (Ctrl+Shift+C)</source>
      <translation>复制识别出的文字（Ctrl+Shift+C）</translation>
    </message>
    <message>
      <source>Copy &amp;Selected Lines</source>
      <translation>复制选中的行(&amp;S)</translation>
    </message>
    <message>
      <source>&amp;Watch Clipboard</source>
      <translation>监视剪贴板(&amp;W)</translation>
    </message>
    <message>
      <source>Watch clipboard</source>
      <translation>监视剪贴板</translation>
    </message>
    <message>
      <source>Recognise every new image put on the clipboard, e.g. a screenshot</source>
      <translation>自动识别剪贴板中的每张新图片，例如截图</translation>
    </message>
    <message>
      <source>Copy Result &amp;Automatically</source>
      <translation>自动复制结果(&amp;A)</translation>
    </message>
    <message>
      <source>&amp;Recognise Again</source>
      <translation>重新识别(&amp;R)</translation>
    </message>
    <message>
      <source>Cancel &amp;Queued</source>
      <translation>取消排队的图片(&amp;Q)</translation>
    </message>
    <message>
      <source>Se&amp;ttings…</source>
      <translation>设置(&amp;T)…</translation>
    </message>
    <message>
      <source>Zoom &amp;In</source>
      <translation>放大(&amp;I)</translation>
    </message>
    <message>
      <source>Zoom &amp;Out</source>
      <translation>缩小(&amp;O)</translation>
    </message>
    <message>
      <source>&amp;Fit to Window</source>
      <translation>适应窗口(&amp;F)</translation>
    </message>
    <message>
      <source>Fit</source>
      <translation>适应</translation>
    </message>
    <message>
      <source>&amp;Actual Size (100%)</source>
      <translation>实际大小 100%(&amp;A)</translation>
    </message>
    <message>
      <source>100%</source>
      <translation>100%</translation>
    </message>
    <message>
      <source>Show &amp;Boxes</source>
      <translation>显示文字框(&amp;B)</translation>
    </message>
    <message>
      <source>Boxes</source>
      <translation>文字框</translation>
    </message>
    <message>
      <source>Draw each recognised line over the image (Ctrl+L)</source>
      <translation>在图片上画出识别出的每一行（Ctrl+L）</translation>
    </message>
    <message>
      <source>&amp;Get HunyuanOCR…</source>
      <translation>获取 HunyuanOCR(&amp;G)…</translation>
    </message>
    <message>
      <source>&amp;About Lector</source>
      <translation>关于 Lector(&amp;A)</translation>
    </message>
    <message>
      <source>&amp;File</source>
      <translation>文件(&amp;F)</translation>
    </message>
    <message>
      <source>&amp;Edit</source>
      <translation>编辑(&amp;E)</translation>
    </message>
    <message>
      <source>&amp;View</source>
      <translation>视图(&amp;V)</translation>
    </message>
    <message>
      <source>&amp;Model</source>
      <translation>模型(&amp;M)</translation>
    </message>
    <message>
      <source>&amp;Help</source>
      <translation>帮助(&amp;H)</translation>
    </message>
    <message>
      <source>Main toolbar</source>
      <translation>主工具栏</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::MainWindow</name>
    <message>
      <source>Watching the clipboard: new images are recognised at once.</source>
      <translation>正在监视剪贴板：新的图片会被立即识别。</translation>
    </message>
    <message>
      <source>Stopped watching the clipboard.</source>
      <translation>已停止监视剪贴板。</translation>
    </message>
    <message>
      <source>About Lector</source>
      <translation>关于 Lector</translation>
    </message>
    <message>
      <source>&lt;h3&gt;Lector %1&lt;/h3&gt;&lt;p&gt;Desktop OCR with PP-OCRv4 and the HunyuanOCR vision-language model, running on this computer.&lt;/p&gt;</source>
      <translation>&lt;h3&gt;Lector %1&lt;/h3&gt;&lt;p&gt;桌面文字识别，使用 PP-OCRv4 和 HunyuanOCR 视觉语言模型，完全在本机运行。&lt;/p&gt;</translation>
    </message>
    <message>
      <source>Text copied.</source>
      <translation>文字已复制。</translation>
    </message>
    <message>
      <source>Clipboard %1</source>
      <translation>剪贴板 %1</translation>
    </message>
    <message>
      <source>%1 — Lector</source>
      <translation>%1 — Lector</translation>
    </message>
    <message>
      <source>Lector</source>
      <translation>Lector</translation>
    </message>
    <message>
      <source>Presets</source>
      <translation>预设</translation>
    </message>
    <message>
      <source>The presets could not be read: %1</source>
      <translation>无法读取预设：%1</translation>
    </message>
    <message>
      <source>%1 images queued.</source>
      <translation>已加入 %1 张图片。</translation>
    </message>
    <message>
      <source>%1: %2</source>
      <translation>%1：%2</translation>
    </message>
    <message numerus="yes">
      <source>%n line(s) copied.</source>
      <translation>
        <numerusform>已复制 %n 行。</numerusform>
      </translation>
    </message>
    <message>
      <source>Nothing to export yet.</source>
      <translation>还没有可导出的结果。</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::PresetPanel</name>
    <message>
      <source>&amp;Model</source>
      <translation>模型(&amp;M)</translation>
    </message>
    <message>
      <source>&amp;Preset</source>
      <translation>预设(&amp;P)</translation>
    </message>
    <message>
      <source>Translate to</source>
      <translation>翻译为</translation>
    </message>
    <message>
      <source>Fields</source>
      <translation>字段</translation>
    </message>
    <message>
      <source>Comma-separated field names</source>
      <translation>用逗号分隔的字段名</translation>
    </message>
    <message>
      <source>Prompt</source>
      <translation>提示词</translation>
    </message>
    <message>
      <source>Describe what to read, e.g. “List every price in this photo as JSON.”</source>
      <translation>描述要识别的内容，例如“把图中所有价格以 JSON 列出。”</translation>
    </message>
    <message>
      <source>Recognise again</source>
      <translation>重新识别</translation>
    </message>
    <message>
      <source>Run the current image again with this preset (F5)</source>
      <translation>用此预设重新识别当前图片（F5）</translation>
    </message>
    <message>
      <source>PP-OCRv4 reads the text lines, then fills the fields from their printed labels (e.g. %1) and the values to the right or below.</source>
      <translation>PP-OCRv4 先识别文字行，再根据印刷的标签（如“%1”）及其右侧或下方的值填写字段。</translation>
    </message>
    <message>
      <source>PP-OCRv4 detects and reads every text line; no prompt is used.</source>
      <translation>PP-OCRv4 检测并识别每一行文字，不使用提示词。</translation>
    </message>
    <message>
      <source>Prompt: (write one above)</source>
      <translation>提示词：（请在上方填写）</translation>
    </message>
    <message>
      <source>Prompt: %1</source>
      <translation>提示词：%1</translation>
    </message>
    <message>
      <source>Loading the model…</source>
      <translation>正在加载模型…</translation>
    </message>
    <message>
      <source>Not loaded: %1</source>
      <translation>未加载：%1</translation>
    </message>
    <message>
      <source>Ready: %1</source>
      <translation>就绪：%1</translation>
    </message>
    <message>
      <source>No model loaded.</source>
      <translation>尚未加载模型。</translation>
    </message>
    <message>
      <source>“%1” needs the HunyuanOCR vision-language model, which is not loaded. Recognising with it now would fail.</source>
      <translation>“%1”需要 HunyuanOCR 视觉语言模型，但它尚未加载。现在识别将会失败。</translation>
    </message>
    <message>
      <source>Use HunyuanOCR</source>
      <translation>使用 HunyuanOCR</translation>
    </message>
    <message>
      <source>Settings…</source>
      <translation>设置…</translation>
    </message>
    <message>
      <source>HunyuanOCR could not be loaded. Choose its folder in Settings, or download it.</source>
      <translation>无法加载 HunyuanOCR。请在设置中选择它的文件夹，或下载它。</translation>
    </message>
    <message>
      <source>Write a prompt for the custom preset.</source>
      <translation>请为自定义预设填写提示词。</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::QueueView</name>
    <message>
      <source>Recognise again</source>
      <translation>重新识别</translation>
    </message>
    <message>
      <source>Remove from list</source>
      <translation>从列表中移除</translation>
    </message>
    <message>
      <source>Clear finished</source>
      <translation>清除已完成的</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::ResultPresenter</name>
    <message>
      <source>Recognising…</source>
      <translation>正在识别…</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::ResultsPanel</name>
    <message>
      <source>Text</source>
      <translation>文字</translation>
    </message>
    <message>
      <source>Lines</source>
      <translation>文字行</translation>
    </message>
    <message>
      <source>Fields</source>
      <translation>字段</translation>
    </message>
    <message>
      <source>Markdown</source>
      <translation>Markdown</translation>
    </message>
    <message>
      <source>JSON</source>
      <translation>JSON</translation>
    </message>
    <message>
      <source>Copy all</source>
      <translation>全部复制</translation>
    </message>
    <message>
      <source>Copy the whole text to the clipboard</source>
      <translation>将全部文字复制到剪贴板</translation>
    </message>
    <message>
      <source>#</source>
      <translation>#</translation>
    </message>
    <message>
      <source>Confidence</source>
      <translation>置信度</translation>
    </message>
    <message>
      <source>Box (x0, y0 – x1, y1)</source>
      <translation>位置 (x0, y0 – x1, y1)</translation>
    </message>
    <message>
      <source>Field</source>
      <translation>字段</translation>
    </message>
    <message>
      <source>Value</source>
      <translation>值</translation>
    </message>
    <message>
      <source>No fields. Choose an extraction preset (ID card, Invoice, Receipt) to fill this table.</source>
      <translation>没有字段。选择信息抽取类预设（身份证、发票、收据）即可填充此表。</translation>
    </message>
    <message>
      <source>The recognised text appears here.</source>
      <translation>识别出的文字会显示在这里。</translation>
    </message>
    <message>
      <source>Recognition failed: %1</source>
      <translation>识别失败：%1</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::SettingsDialog</name>
    <message>
      <source>HunyuanOCR folder</source>
      <translation>HunyuanOCR 文件夹</translation>
    </message>
    <message>
      <source>Settings</source>
      <translation>设置</translation>
    </message>
    <message>
      <source>General</source>
      <translation>常规</translation>
    </message>
    <message>
      <source>Language</source>
      <translation>界面语言</translation>
    </message>
    <message>
      <source>System default</source>
      <translation>跟随系统</translation>
    </message>
    <message>
      <source>Default preset</source>
      <translation>默认预设</translation>
    </message>
    <message>
      <source>Copy the recognised text to the clipboard automatically</source>
      <translation>自动将识别出的文字复制到剪贴板</translation>
    </message>
    <message>
      <source>Watch the clipboard and recognise new images at once</source>
      <translation>监视剪贴板，立即识别新的图片</translation>
    </message>
    <message>
      <source>HunyuanOCR (vision-language model)</source>
      <translation>HunyuanOCR（视觉语言模型）</translation>
    </message>
    <message>
      <source>Model folder</source>
      <translation>模型文件夹</translation>
    </message>
    <message>
      <source>Folder with config.json, model weights, tokenizer.json …</source>
      <translation>包含 config.json、模型权重、tokenizer.json 等文件的文件夹</translation>
    </message>
    <message>
      <source>Browse…</source>
      <translation>浏览…</translation>
    </message>
    <message>
      <source>Get HunyuanOCR…</source>
      <translation>获取 HunyuanOCR…</translation>
    </message>
    <message>
      <source>Device</source>
      <translation>设备</translation>
    </message>
    <message>
      <source>GPU (CUDA)</source>
      <translation>GPU（CUDA）</translation>
    </message>
    <message>
      <source>CPU (slow)</source>
      <translation>CPU（较慢）</translation>
    </message>
    <message>
      <source>Number format</source>
      <translation>数值精度</translation>
    </message>
    <message>
      <source>Automatic (float16 on GPU, float32 on CPU)</source>
      <translation>自动（GPU 用 float16，CPU 用 float32）</translation>
    </message>
    <message>
      <source>Batch defaults</source>
      <translation>批量识别默认值</translation>
    </message>
    <message>
      <source>Include subfolders</source>
      <translation>包含子文件夹</translation>
    </message>
    <message>
      <source>File types</source>
      <translation>文件类型</translation>
    </message>
    <message>
      <source>Save as</source>
      <translation>保存为</translation>
    </message>
    <message>
      <source>JSON Lines</source>
      <translation>JSON Lines</translation>
    </message>
    <message>
      <source>CSV</source>
      <translation>CSV</translation>
    </message>
    <message>
      <source>JSON per image</source>
      <translation>每张图片一个 JSON</translation>
    </message>
    <message>
      <source>Text per image</source>
      <translation>每张图片一个文本文件</translation>
    </message>
    <message>
      <source>Model, device and number format changes apply when the model is next loaded.</source>
      <translation>模型、设备和数值精度的更改将在下次加载模型时生效。</translation>
    </message>
    <message>
      <source>Not set. PP-OCRv4 works without it; HunyuanOCR presets need it.</source>
      <translation>未设置。PP-OCRv4 无需此项；HunyuanOCR 预设需要它。</translation>
    </message>
    <message>
      <source>OK</source>
      <translation>确定</translation>
    </message>
    <message>
      <source>Cancel</source>
      <translation>取消</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::StatusLine</name>
    <message>
      <source>End-to-end time of the last image, and where it went</source>
      <translation>上一张图片的总耗时及各阶段用时</translation>
    </message>
    <message>
      <source>Images waiting and being recognised</source>
      <translation>等待中和识别中的图片</translation>
    </message>
    <message>
      <source>Model, device and number format</source>
      <translation>模型、设备和数值精度</translation>
    </message>
    <message>
      <source>Batch %1/%2 · %3 img/s · ETA %4</source>
      <translation>批量 %1/%2 · %3 img/s · 剩余 %4</translation>
    </message>
    <message>
      <source>Last: %1</source>
      <translation>上次：%1</translation>
    </message>
    <message>
      <source>Last: —</source>
      <translation>上次：—</translation>
    </message>
    <message>
      <source>Queue: %1 waiting, %2 running</source>
      <translation>队列：%1 等待，%2 识别中</translation>
    </message>
    <message>
      <source>Loading model…</source>
      <translation>正在加载模型…</translation>
    </message>
  </context>
  <context>
    <name>lector::ui::TrayController</name>
    <message>
      <source>Show / Hide Lector</source>
      <translation>显示 / 隐藏 Lector</translation>
    </message>
    <message>
      <source>Lector</source>
      <translation>Lector</translation>
    </message>
    <message>
      <source>Lector — last result:
%1</source>
      <translation>Lector — 最近结果：
%1</translation>
    </message>
    <message>
      <source>Text recognised</source>
      <translation>文字已识别</translation>
    </message>
  </context>
</TS>
