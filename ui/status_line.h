// StatusLine: the status bar's permanent widgets. Latency of the last request with its split (queue,
// preprocess, vision/det, prefill, decode/rec ...), queue depth, device and dtype of the loaded model,
// and, while a folder batch runs, its pages/s and ETA. Display only; GUI thread only.
#pragma once

#include <QWidget>

#include "core/doc/ocr_result.h"
#include "core/engine/engine.h"

class QLabel;

namespace lector::ui {

struct BatchProgress;

// "812 ms" / "2.4 s".
QString formatMs(double ms);
// "1:05" / "1:02:03"; negative: "—".
QString formatEta(double seconds);
// "812 ms  (queue 3 · preprocess 40 · det 210 · rec 520)".
QString formatLatency(const doc::OcrResult& result);

class StatusLine : public QWidget {
    Q_OBJECT
public:
    explicit StatusLine(QWidget* parent = nullptr);

    void setLastResult(const doc::OcrResult& result);
    void setQueueDepth(int queued, int running);
    void setEngine(const engine::EngineInfo& info, bool loading);
    void setBatchProgress(const BatchProgress& progress);
    void clearBatch();

    QString latencyText() const;
    QString queueText() const;
    QString engineText() const;
    QString batchText() const;

protected:
    void changeEvent(QEvent* event) override;

private:
    void retranslate();
    QLabel* m_latency;
    QLabel* m_queue;
    QLabel* m_engine;
    QLabel* m_batch;
    int m_queued = 0;
    int m_running = 0;
    engine::EngineInfo m_info;
    bool m_loading = false;
    bool m_hasResult = false;
    doc::OcrResult m_last;
};

}  // namespace lector::ui
