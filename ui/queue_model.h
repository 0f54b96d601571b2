// QueueModel: the side list of images the user gave the app (files, folders, pastes, clipboard
// captures), each with thumbnail, status, latency and, once done, its result. A list model for the
// queue view; RecognitionController moves items through their states. GUI thread only.
#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QImage>
#include <QString>

#include <memory>
#include <optional>
#include <vector>

#include "core/common/image.h"
#include "core/doc/ocr_result.h"
#include "core/engine/engine.h"

namespace lector::ui {

enum class ItemStatus { Queued, Loading, Running, Done, Failed, Cancelled };
QString statusText(ItemStatus status);  // translated

struct QueueItem {
    quint64 id = 0;
    QString path;                          // empty for pasted / clipboard images
    QString name;                          // shown in the list and written as the result's "image"
    QImage thumbnail;
    ItemStatus status = ItemStatus::Queued;
    double latencyMs = 0;                  // end-to-end ("total" timing) once done
    std::shared_ptr<const Image> image;    // held while in flight, and always for pasted images
    std::optional<doc::OcrResult> result;
    QString errorText;
    quint64 ticket = 0;                    // EngineBridge ticket while running
    engine::Clock::time_point createdAt{};  // when its turn came (decoding starts): the latency's zero
    double decodeMs = 0;
};

class QueueModel : public QAbstractListModel {
    Q_OBJECT
public:
    enum Role { IdRole = Qt::UserRole + 1, StatusRole, LatencyRole, PathRole, StatusTextRole };

    explicit QueueModel(QObject* parent = nullptr);

    int rowCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;

    // Appends and returns the new item's id.
    quint64 append(QueueItem item);
    QueueItem* find(quint64 id);
    const QueueItem* find(quint64 id) const;
    int rowOf(quint64 id) const;              // -1 when absent
    const QueueItem& at(int row) const { return m_items[static_cast<size_t>(row)]; }
    quint64 idAt(int row) const { return m_items[static_cast<size_t>(row)].id; }
    // Call after changing an item found with find().
    void notifyChanged(quint64 id);
    void remove(quint64 id);
    void clear();
    int count(ItemStatus status) const;
    std::vector<doc::OcrResult> finishedResults() const;  // in list order

private:
    void reindex();
    std::vector<QueueItem> m_items;
    QHash<quint64, int> m_rowOf;
    quint64 m_nextId = 0;
};

}  // namespace lector::ui
