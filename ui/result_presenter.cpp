#include "ui/result_presenter.h"

#include "ui/engine_bridge.h"
#include "ui/image_convert.h"
#include "ui/image_loader.h"
#include "ui/image_view.h"
#include "ui/queue_model.h"
#include "ui/results_panel.h"

namespace lector::ui {

ResultPresenter::ResultPresenter(QueueModel& queue, ImageView& view, ResultsPanel& panel, EngineBridge& bridge,
                                 QObject* parent)
    : QObject(parent), m_queue(queue), m_view(view), m_panel(panel)
{
    connect(&m_view, &ImageView::lineSelectionChanged, &m_panel, &ResultsPanel::selectLines);
    connect(&m_panel, &ResultsPanel::lineSelectionChanged, &m_view, &ImageView::selectLines);
    connect(&bridge, &EngineBridge::partialText, this, &ResultPresenter::onPartial);
}

void ResultPresenter::show(quint64 id)
{
    m_current = id;
    ++m_loadSerial;
    const QueueItem* item = m_queue.find(id);
    if (!item) {
        m_view.clear();
        m_panel.clear();
        Q_EMIT imageShown(0);
        return;
    }
    if (item->image) {
        m_view.setImage(toQImage(item->image));
        showResult();
        Q_EMIT imageShown(id);
        return;
    }
    // Files are not kept decoded in the queue: read it again for display.
    const quint64 serial = m_loadSerial;
    loadImageAsync(item->path, false).then(this, [this, id, serial](const LoadedImage& loaded) {
        if (serial != m_loadSerial) return;  // another item was chosen meanwhile
        if (loaded.ok()) m_view.setImage(toQImage(loaded.image));
        else m_view.clear();
        showResult();
        Q_EMIT imageShown(id);
    });
}

void ResultPresenter::refresh(quint64 id)
{
    if (id != m_current) return;
    showResult();
}

void ResultPresenter::showResult()
{
    const QueueItem* item = m_queue.find(m_current);
    if (!item) return;
    const bool busy = item->status == ItemStatus::Queued || item->status == ItemStatus::Loading ||
                      item->status == ItemStatus::Running;
    if (busy) {
        m_view.setLines({});
        m_view.setBusyText(tr("Recognising…"));
        m_panel.clear(tr("Recognising…"));
        return;
    }
    m_view.setBusyText({});
    if (item->result) {
        m_view.setLines(item->result->lines);
        m_panel.setResult(*item->result);
    } else {
        m_view.setLines({});
        m_panel.clear();
    }
}

void ResultPresenter::onPartial(quint64 ticket, int, const QString& text)
{
    const QueueItem* item = m_queue.find(m_current);
    if (item && item->ticket == ticket && item->status == ItemStatus::Running) m_panel.setPartialText(text);
}

}  // namespace lector::ui
