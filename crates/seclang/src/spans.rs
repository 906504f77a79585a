//! Span erasure, for comparing trees read from different texts.

use crate::ast::{ActionValue, Config, CtlValue, Directive, Target};
use crate::source::Span;

impl Config {
    /// Sets every span in the tree to the default, so two trees parsed from
    /// differently laid out texts compare equal when they mean the same.
    pub fn clear_spans(&mut self) {
        for item in &mut self.items {
            item.span = Span::default();
            match &mut item.directive {
                Directive::Rule(rule) => {
                    rule.operator.span = Span::default();
                    clear_targets(&mut rule.targets);
                    clear_actions(&mut rule.actions);
                }
                Directive::DefaultAction(actions) | Directive::UpdateActionById { actions, .. } => {
                    clear_actions(actions)
                }
                Directive::UpdateTarget(u) => {
                    clear_targets(&mut u.targets);
                    if let Some(r) = &mut u.replaced {
                        r.span = Span::default();
                    }
                }
                _ => {}
            }
        }
    }
}

fn clear_targets(targets: &mut [Target]) {
    for t in targets {
        t.span = Span::default();
    }
}

fn clear_actions(actions: &mut [crate::ast::Action]) {
    for a in actions {
        a.span = Span::default();
        if let ActionValue::Ctl(c) = &mut a.value {
            if let CtlValue::RemoveTarget(u) = &mut c.value {
                clear_targets(&mut u.targets);
            }
        }
    }
}
