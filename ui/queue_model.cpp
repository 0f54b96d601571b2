#include "ui/queue_model.h"

#include <QCoreApplication>
#include <QDir>

namespace lector::ui {

QString statusText(ItemStatus status)
{
    switch (status) {
    case ItemStatus::Queued: return QCoreApplication::translate("QueueModel", "Queued");
    case ItemStatus::Loading: return QCoreApplication::translate("QueueModel", "Loading");
    case ItemStatus::Running: return QCoreApplication::translate("QueueModel", "Running");
    case ItemStatus::Done: return QCoreApplication::translate("QueueModel", "Done");
    case ItemStatus::Failed: return QCoreApplication::translate("QueueModel", "Failed");
    case ItemStatus::Cancelled: return QCoreApplication::translate("QueueModel", "Cancelled");
    }
    return {};
}

QueueModel::QueueModel(QObject* parent) : QAbstractListModel(parent) {}

int QueueModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_items.size());
}

QVariant QueueModel::data(const QModelIndex& index, int role) const
{
    if (!index.isValid() || index.row() >= rowCount()) return {};
    const QueueItem& item = m_items[static_cast<size_t>(index.row())];
    switch (role) {
    case Qt::DisplayRole: return item.name;
    case Qt::DecorationRole: return item.thumbnail;
    case Qt::ToolTipRole: {
        QString tip = item.path.isEmpty() ? item.name : QDir::toNativeSeparators(item.path);
        if (!item.errorText.isEmpty()) tip += QLatin1Char('\n') + item.errorText;
        return tip;
    }
    case IdRole: return item.id;
    case StatusRole: return static_cast<int>(item.status);
    case LatencyRole: return item.latencyMs;
    case PathRole: return item.path;
    case StatusTextRole: {
        if (item.status == ItemStatus::Done)
            return QCoreApplication::translate("QueueModel", "%1 lines · %2 ms")
                .arg(item.result ? item.result->lines.size() : 0)
                .arg(item.latencyMs, 0, 'f', 0);
        if (item.status == ItemStatus::Failed && !item.errorText.isEmpty())
            return statusText(item.status) + QStringLiteral(": ") + item.errorText;
        return statusText(item.status);
    }
    default: return {};
    }
}

quint64 QueueModel::append(QueueItem item)
{
    item.id = ++m_nextId;
    const int row = rowCount();
    beginInsertRows({}, row, row);
    m_items.push_back(std::move(item));
    m_rowOf.insert(m_items.back().id, row);
    endInsertRows();
    return m_items.back().id;
}

QueueItem* QueueModel::find(quint64 id)
{
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_items[static_cast<size_t>(row)];
}

const QueueItem* QueueModel::find(quint64 id) const
{
    const int row = rowOf(id);
    return row < 0 ? nullptr : &m_items[static_cast<size_t>(row)];
}

int QueueModel::rowOf(quint64 id) const { return m_rowOf.value(id, -1); }

void QueueModel::notifyChanged(quint64 id)
{
    const int row = rowOf(id);
    if (row >= 0) Q_EMIT dataChanged(index(row), index(row));
}

void QueueModel::remove(quint64 id)
{
    const int row = rowOf(id);
    if (row < 0) return;
    beginRemoveRows({}, row, row);
    m_items.erase(m_items.begin() + row);
    reindex();
    endRemoveRows();
}

void QueueModel::clear()
{
    beginResetModel();
    m_items.clear();
    m_rowOf.clear();
    endResetModel();
}

int QueueModel::count(ItemStatus status) const
{
    int n = 0;
    for (const auto& item : m_items) n += item.status == status ? 1 : 0;
    return n;
}

std::vector<doc::OcrResult> QueueModel::finishedResults() const
{
    std::vector<doc::OcrResult> out;
    for (const auto& item : m_items) {
        if (item.result) out.push_back(*item.result);
    }
    return out;
}

void QueueModel::reindex()
{
    m_rowOf.clear();
    for (size_t i = 0; i < m_items.size(); ++i) m_rowOf.insert(m_items[i].id, static_cast<int>(i));
}

}  // namespace lector::ui
