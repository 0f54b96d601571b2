#include "ui/queue_view.h"

#include <QContextMenuEvent>
#include <QMenu>
#include <QPainter>
#include <QStyledItemDelegate>

#include "ui/queue_model.h"

namespace lector::ui {
namespace {

QColor statusColor(ItemStatus s)
{
    switch (s) {
    case ItemStatus::Done: return QColor(0x1f, 0x8a, 0x45);
    case ItemStatus::Failed: return QColor(0xc6, 0x28, 0x28);
    case ItemStatus::Running:
    case ItemStatus::Loading: return QColor(0x1d, 0x5f, 0xd1);
    default: return QColor(0x80, 0x80, 0x80);
    }
}

class QueueDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    static constexpr int kThumb = 48;

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex&) const override
    {
        return QSize(option.rect.width(), std::max(kThumb, option.fontMetrics.height() * 2 + 6) + 10);
    }

    void paint(QPainter* p, const QStyleOptionViewItem& option, const QModelIndex& index) const override
    {
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        opt.text.clear();
        opt.icon = QIcon();
        opt.features &= ~QStyleOptionViewItem::HasDecoration;
        opt.widget->style()->drawControl(QStyle::CE_ItemViewItem, &opt, p, opt.widget);  // background, selection

        const QRect r = option.rect.adjusted(6, 5, -6, -5);
        const QImage thumb = index.data(Qt::DecorationRole).value<QImage>();
        const QRect thumbBox(r.left(), r.top() + (r.height() - kThumb) / 2, kThumb, kThumb);
        p->save();
        p->setRenderHint(QPainter::SmoothPixmapTransform);
        if (!thumb.isNull()) {
            QSize s = thumb.size().scaled(thumbBox.size(), Qt::KeepAspectRatio);
            const QRect target(thumbBox.center() - QPoint(s.width() / 2, s.height() / 2), s);
            p->drawImage(target, thumb);
        } else {
            p->fillRect(thumbBox, option.palette.color(QPalette::AlternateBase));
        }
        const bool selected = option.state & QStyle::State_Selected;
        const QColor textColor = option.palette.color(selected ? QPalette::HighlightedText : QPalette::Text);
        const QRect textBox(thumbBox.right() + 8, r.top(), r.right() - thumbBox.right() - 8, r.height());
        const QFontMetrics fm(option.font);
        p->setPen(textColor);
        p->drawText(textBox.adjusted(0, 2, 0, 0), Qt::AlignLeft | Qt::AlignTop,
                    fm.elidedText(index.data(Qt::DisplayRole).toString(), Qt::ElideMiddle, textBox.width()));
        const auto status = static_cast<ItemStatus>(index.data(QueueModel::StatusRole).toInt());
        QFont small = option.font;
        small.setPointSizeF(small.pointSizeF() * 0.9);
        p->setFont(small);
        p->setPen(selected ? textColor : statusColor(status));
        p->drawText(textBox.adjusted(0, 0, 0, -2), Qt::AlignLeft | Qt::AlignBottom,
                    QFontMetrics(small).elidedText(index.data(QueueModel::StatusTextRole).toString(), Qt::ElideRight,
                                                   textBox.width()));
        p->restore();
    }
};

}  // namespace

QueueView::QueueView(QueueModel& model, QWidget* parent) : QListView(parent), m_model(model)
{
    setModel(&m_model);
    setItemDelegate(new QueueDelegate(this));
    setSelectionMode(SingleSelection);
    setUniformItemSizes(true);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setMinimumWidth(180);
    connect(selectionModel(), &QItemSelectionModel::currentChanged, this,
            [this] { Q_EMIT currentIdChanged(currentId()); });
}

quint64 QueueView::currentId() const
{
    const QModelIndex idx = currentIndex();
    return idx.isValid() ? idx.data(QueueModel::IdRole).toULongLong() : 0;
}

void QueueView::setCurrentId(quint64 id)
{
    const int row = m_model.rowOf(id);
    if (row < 0) return;
    setCurrentIndex(m_model.index(row));
}

void QueueView::contextMenuEvent(QContextMenuEvent* event)
{
    const QModelIndex idx = indexAt(event->pos());
    QMenu menu(this);
    if (idx.isValid()) {
        const quint64 id = idx.data(QueueModel::IdRole).toULongLong();
        menu.addAction(tr("Recognise again"), this, [this, id] { Q_EMIT rerunRequested(id); });
        menu.addAction(tr("Remove from list"), this, [this, id] { Q_EMIT removeRequested(id); });
        menu.addSeparator();
    }
    menu.addAction(tr("Clear finished"), this, &QueueView::clearFinishedRequested);
    menu.exec(event->globalPos());
}

}  // namespace lector::ui
