#include "ui/status_line.h"

#include <QCoreApplication>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>

#include <cmath>

#include "ui/batch_job.h"
#include "ui/model_choice.h"

namespace lector::ui {
namespace {

// Short names for the timing stages; unknown ones are shown as the engine names them.
QString stageName(const std::string& stage)
{
    if (stage == "queue") return QCoreApplication::translate("StatusLine", "queue");
    if (stage == "decode_image" || stage == "load") return QCoreApplication::translate("StatusLine", "load");
    if (stage == "preprocess") return QCoreApplication::translate("StatusLine", "preprocess");
    if (stage == "det" || stage == "detection") return QCoreApplication::translate("StatusLine", "det");
    if (stage == "cls") return QCoreApplication::translate("StatusLine", "cls");
    if (stage == "rec" || stage == "recognition") return QCoreApplication::translate("StatusLine", "rec");
    if (stage == "vision") return QCoreApplication::translate("StatusLine", "vision");
    if (stage == "prefill") return QCoreApplication::translate("StatusLine", "prefill");
    if (stage == "decode") return QCoreApplication::translate("StatusLine", "decode");
    if (stage == "postprocess") return QCoreApplication::translate("StatusLine", "post");
    return QString::fromStdString(stage);
}

QLabel* makeLabel(QWidget* parent)
{
    auto* l = new QLabel(parent);
    l->setTextFormat(Qt::PlainText);
    return l;
}

}  // namespace

QString formatMs(double ms)
{
    if (ms < 1000.0) return QCoreApplication::translate("StatusLine", "%1 ms").arg(ms, 0, 'f', ms < 10 ? 1 : 0);
    return QCoreApplication::translate("StatusLine", "%1 s").arg(ms / 1000.0, 0, 'f', 2);
}

QString formatEta(double seconds)
{
    if (seconds < 0 || !std::isfinite(seconds)) return QStringLiteral("—");
    const qint64 s = static_cast<qint64>(seconds + 0.5);
    if (s >= 3600) return QStringLiteral("%1:%2:%3").arg(s / 3600).arg((s / 60) % 60, 2, 10, QLatin1Char('0')).arg(s % 60, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

QString formatLatency(const doc::OcrResult& result)
{
    QStringList parts;
    for (const auto& [stage, ms] : result.timingMs) {
        if (stage == "total") continue;
        parts << QStringLiteral("%1 %2").arg(stageName(stage)).arg(ms, 0, 'f', ms < 10 ? 1 : 0);
    }
    QString text = formatMs(result.timing("total"));
    if (!parts.isEmpty()) text += QStringLiteral("  (") + parts.join(QStringLiteral(" · ")) + QLatin1Char(')');
    if (result.tokens && result.tokens->generated > 0) {
        const double decode = result.timing("decode");
        if (decode > 0)
            text += QCoreApplication::translate("StatusLine", "  %1 tok/s").arg(result.tokens->generated * 1000.0 / decode, 0, 'f', 0);
    }
    return text;
}

StatusLine::StatusLine(QWidget* parent) : QWidget(parent)
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(16);
    m_batch = makeLabel(this);
    m_latency = makeLabel(this);
    m_queue = makeLabel(this);
    m_engine = makeLabel(this);
    layout->addWidget(m_batch);
    layout->addWidget(m_latency);
    layout->addWidget(m_queue);
    layout->addWidget(m_engine);
    m_batch->setVisible(false);
    retranslate();
}

void StatusLine::retranslate()
{
    m_latency->setText(latencyText());
    m_queue->setText(queueText());
    m_engine->setText(engineText());
    m_latency->setToolTip(tr("End-to-end time of the last image, and where it went"));
    m_queue->setToolTip(tr("Images waiting and being recognised"));
    m_engine->setToolTip(tr("Model, device and number format"));
}

void StatusLine::changeEvent(QEvent* event)
{
    if (event->type() == QEvent::LanguageChange) retranslate();
    QWidget::changeEvent(event);
}

void StatusLine::setLastResult(const doc::OcrResult& result)
{
    if (result.failed()) return;  // keep the last real measurement
    m_last = result;
    m_hasResult = true;
    m_latency->setText(latencyText());
}

void StatusLine::setQueueDepth(int queued, int running)
{
    m_queued = queued;
    m_running = running;
    m_queue->setText(queueText());
}

void StatusLine::setEngine(const engine::EngineInfo& info, bool loading)
{
    m_info = info;
    m_loading = loading;
    m_engine->setText(engineText());
}

void StatusLine::setBatchProgress(const BatchProgress& p)
{
    m_batch->setVisible(true);
    m_batch->setText(tr("Batch %1/%2 · %3 img/s · ETA %4")
                         .arg(p.done)
                         .arg(p.total)
                         .arg(p.imagesPerSecond, 0, 'f', 1)
                         .arg(formatEta(p.etaSeconds)));
}

void StatusLine::clearBatch() { m_batch->setVisible(false); }

QString StatusLine::latencyText() const
{
    return m_hasResult ? tr("Last: %1").arg(formatLatency(m_last)) : tr("Last: —");
}

QString StatusLine::queueText() const { return tr("Queue: %1 waiting, %2 running").arg(m_queued).arg(m_running); }

QString StatusLine::engineText() const
{
    if (m_loading) return tr("Loading model…");
    return describeEngine(m_info);
}

QString StatusLine::batchText() const { return m_batch->isVisible() ? m_batch->text() : QString(); }

}  // namespace lector::ui
