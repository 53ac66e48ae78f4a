package store

import (
	"context"
	"maps"
	"time"
)

// TakeSlot implements Slots with the process clock: the memory store
// serves one instance.
func (m *Memory) TakeSlot(_ context.Context, set, id string, limit int, ttl time.Duration) (bool, error) {
	if err := checkSlot(set, id, limit, ttl); err != nil {
		return false, err
	}
	now := time.Now()
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	held := m.slots[set]
	maps.DeleteFunc(held, func(_ string, exp time.Time) bool { return !exp.After(now) })
	if _, renew := held[id]; !renew && len(held) >= limit {
		return false, nil
	}
	if held == nil {
		if m.slots == nil {
			m.slots = map[string]map[string]time.Time{}
		}
		held = map[string]time.Time{}
		m.slots[set] = held
	}
	held[id] = now.Add(ttl)
	return true, nil
}

// GiveSlot implements Slots.
func (m *Memory) GiveSlot(_ context.Context, set, id string) error {
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	delete(m.slots[set], id)
	if len(m.slots[set]) == 0 {
		delete(m.slots, set)
	}
	return nil
}

// purgeSlots drops the slots that have expired by now.
func (m *Memory) purgeSlots(now time.Time) {
	m.slotMu.Lock()
	defer m.slotMu.Unlock()
	for set, held := range m.slots {
		maps.DeleteFunc(held, func(_ string, exp time.Time) bool { return !exp.After(now) })
		if len(held) == 0 {
			delete(m.slots, set)
		}
	}
}
